#include "chunk_assignment.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "gradwire/common/error.h"

namespace gradwire::data {

namespace {
std::vector<ChunkRef> all_chunks(const std::vector<std::vector<uint64_t>>& record_counts) {
  std::vector<ChunkRef> chunks;
  for (size_t f = 0; f < record_counts.size(); ++f) {
    for (size_t c = 0; c < record_counts[f].size(); ++c) {
      chunks.push_back(ChunkRef{static_cast<uint32_t>(f), c, record_counts[f][c], 0});
    }
  }
  return chunks;
}

bool file_order(const ChunkRef& a, const ChunkRef& b) {
  return a.file != b.file ? a.file < b.file : a.chunk < b.chunk;
}
}  // namespace

uint64_t total_records(const std::vector<ChunkRef>& chunks) {
  uint64_t total = 0;
  for (const ChunkRef& chunk : chunks) total += chunk.records;
  return total;
}

std::vector<std::vector<ChunkRef>> assign_chunks(
    const std::vector<std::vector<uint64_t>>& record_counts, int ranks) {
  return assign_chunk_list(all_chunks(record_counts), ranks);
}

std::vector<std::vector<ChunkRef>> assign_chunk_list(std::vector<ChunkRef> chunks, int ranks) {
  if (ranks < 1) {
    throw InvalidArgument("gradwire: assign_chunks needs at least one rank, got " +
                          std::to_string(ranks));
  }
  // Largest first; among equals, file order.
  std::sort(chunks.begin(), chunks.end(), file_order);
  std::stable_sort(chunks.begin(), chunks.end(),
                   [](const ChunkRef& a, const ChunkRef& b) { return a.records > b.records; });
  std::vector<std::vector<ChunkRef>> shares(static_cast<size_t>(ranks));
  std::vector<uint64_t> loads(shares.size(), 0);
  for (const ChunkRef& chunk : chunks) {
    const size_t lightest =
        static_cast<size_t>(std::min_element(loads.begin(), loads.end()) - loads.begin());
    shares[lightest].push_back(chunk);
    loads[lightest] += chunk.records;
  }
  for (auto& share : shares) std::sort(share.begin(), share.end(), file_order);
  return shares;
}

std::vector<ChunkRef> remaining_chunks(const std::vector<std::vector<uint64_t>>& record_counts,
                                       const std::vector<uint64_t>& consumed) {
  std::vector<ChunkRef> chunks = all_chunks(record_counts);
  if (consumed.size() != chunks.size()) {
    throw InvalidArgument("gradwire: remaining_chunks got " + std::to_string(consumed.size()) +
                          " consumption counts for " + std::to_string(chunks.size()) + " chunks");
  }
  std::vector<ChunkRef> left;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (consumed[i] >= chunks[i].records) continue;
    ChunkRef rest = chunks[i];
    rest.first = consumed[i];
    rest.records -= consumed[i];
    left.push_back(rest);
  }
  return left;
}

uint64_t dynamic_claim_size(uint64_t remaining, int ranks) {
  const uint64_t parts = 2 * static_cast<uint64_t>(std::max(ranks, 1));
  return std::clamp<uint64_t>((remaining + parts - 1) / parts, 1, kMaxDynamicClaim);
}

// Note [claim sizes]: each claim costs a counter round trip, which on a busy machine costs more
// than its latency: the store's thread, the claiming thread and the reader must all be scheduled
// on cores that the readers keep busy. Measured with gradwire-bench data (2 ranks, 60 chunks of
// 0.8 MB, docs/data.md): guided claims of the own segment (remaining / (2 x ranks), 4 to 16) took
// 5-6 round trips per rank and epoch and left the dynamic partition at 0.3-0.45 of a raw read
// where the static one reached 0.4-0.8; claims of 16 chunks matched the static partition side by
// side, and quarters of the segment (3 round trips) come close (0.5-0.75). Balance does not need
// small own claims: the others take what the owner has not claimed from the back, one chunk
// first, then guided sizes, but not the last quarter-claim's worth, which the owner's claim made
// ahead is likely to take anyway (a stealer racing for it lost and paid a round trip per chunk
// of 50 us reading). The cost is that a slow rank keeps what it claimed ahead and up to a quarter
// more: up to three quarters of its segment when the others run out (the slow rank in
// tests/data/claim_schedule_test.cpp).
uint64_t dynamic_own_claim_size(uint64_t segment_size, uint64_t floor) {
  const uint64_t quarter = (segment_size + 3) / 4;
  return std::clamp<uint64_t>(std::max(quarter, floor), 1, kMaxDynamicClaim);
}

uint64_t dynamic_own_claim_floor(double round_trip, double per_chunk) {
  if (!(round_trip > 0) || !(per_chunk > 0)) return kMinDynamicOwnClaim;
  const double chunks = std::ceil(2 * round_trip / per_chunk);
  if (!(chunks < static_cast<double>(kMaxDynamicClaim))) return kMaxDynamicClaim;
  return std::max(kMinDynamicOwnClaim, static_cast<uint64_t>(chunks));
}

namespace {
// The back total lives above bit 32 of a segment's counter (Note [front and back]).
constexpr int kBackShift = 32;
constexpr uint64_t kFrontMask = (uint64_t{1} << kBackShift) - 1;
}  // namespace

int64_t SegmentClaim::delta() const {
  return static_cast<int64_t>(from_back ? size << kBackShift : size);
}

uint64_t ClaimSchedule::Segment::remaining() const {
  return front + back >= size ? 0 : size - front - back;
}

ClaimSchedule::ClaimSchedule(std::vector<uint64_t> segment_sizes, int rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= segment_sizes.size()) {
    throw InvalidArgument("gradwire: ClaimSchedule rank " + std::to_string(rank) +
                          " has no segment among " + std::to_string(segment_sizes.size()));
  }
  const int ranks = static_cast<int>(segment_sizes.size());
  for (const uint64_t size : segment_sizes) {
    Segment segment;
    segment.size = size;
    segment.implicit =
        ranks <= 1 ? size : std::min(size, dynamic_own_claim_size(size, kMinDynamicOwnClaim));
    segment.front = segment.implicit;
    segments_.push_back(segment);
  }
  rank_ = static_cast<uint32_t>(rank);
  segments_[rank_].probed = true;  // nobody steals before the owner's first add tells otherwise
}

SegmentRange ClaimSchedule::first_range() const {
  return SegmentRange{rank_, 0, segments_[rank_].implicit};
}

std::optional<SegmentClaim> ClaimSchedule::next_claim(uint64_t own_claim_floor) const {
  const auto ranks = static_cast<int>(segments_.size());
  const Segment& own = segments_[rank_];
  if (own.remaining() > 0) {
    const uint64_t size =
        std::min(own.remaining(), dynamic_own_claim_size(own.size, own_claim_floor));
    return SegmentClaim{rank_, false, size};
  }
  for (size_t k = 1; k < segments_.size(); ++k) {
    const auto v = static_cast<uint32_t>((rank_ + k) % segments_.size());
    const Segment& other = segments_[v];
    if (other.remaining() == 0) continue;
    if (!other.probed) return SegmentClaim{v, true, 1};
    // What fits the owner's next claim (likely in flight already) is left to the owner: taking it
    // would cost round trips that save the owner less than they cost (Note [claim sizes]).
    const uint64_t owners_next = dynamic_own_claim_size(other.size, kMinDynamicOwnClaim);
    if (other.remaining() <= owners_next) continue;
    return SegmentClaim{v, true, dynamic_claim_size(other.remaining() - owners_next, ranks)};
  }
  return std::nullopt;
}

SegmentRange ClaimSchedule::record(const SegmentClaim& claim, int64_t counter_value) {
  GRADWIRE_CHECK_LT(claim.segment, segments_.size());
  Segment& segment = segments_[claim.segment];
  SegmentRange got{claim.segment, 0, 0};
  if (counter_value < 0) {  // not a counter of ours: give the segment up rather than loop
    segment.front = segment.size;
    return got;
  }
  const auto value = static_cast<uint64_t>(counter_value);
  const uint64_t front = segment.implicit + (value & kFrontMask);
  const uint64_t back = value >> kBackShift;
  segment.front = std::max(segment.front, front);
  segment.back = std::max(segment.back, back);
  segment.probed = true;
  const uint64_t size = segment.size;
  const uint64_t back_start = size - std::min(back, size);  // S - B, at least 0
  if (!claim.from_back) {
    if (front < segment.implicit + claim.size) return got;  // a counter that went backwards
    got.begin = front - claim.size;
    got.end = std::min({front, back_start, size});
  } else {
    if (back < claim.size) return got;
    got.begin = std::max(back_start, front);
    got.end = size - std::min(back - claim.size, size);  // S - B + c
  }
  if (got.end < got.begin) got.end = got.begin;
  return got;
}

}  // namespace gradwire::data
