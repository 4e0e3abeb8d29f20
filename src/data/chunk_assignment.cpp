#include "gradwire/data/chunk_assignment.h"

#include <algorithm>
#include <string>

#include "gradwire/common/error.h"
#include "shuffle.h"

namespace gradwire::data {

namespace {
std::vector<ChunkRef> all_chunks(const std::vector<std::vector<uint64_t>>& record_counts) {
  std::vector<ChunkRef> chunks;
  for (size_t f = 0; f < record_counts.size(); ++f) {
    for (size_t c = 0; c < record_counts[f].size(); ++c) {
      chunks.push_back(ChunkRef{static_cast<uint32_t>(f), c, record_counts[f][c]});
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
  if (ranks < 1) {
    throw InvalidArgument("gradwire: assign_chunks needs at least one rank, got " +
                          std::to_string(ranks));
  }
  std::vector<ChunkRef> chunks = all_chunks(record_counts);
  // Largest first; among equals, file order (stable sort keeps it).
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

std::vector<ChunkRef> dynamic_chunk_order(const std::vector<std::vector<uint64_t>>& record_counts,
                                          bool shuffle, uint64_t seed, uint64_t epoch) {
  std::vector<ChunkRef> chunks = all_chunks(record_counts);
  if (!shuffle) return chunks;
  std::vector<ChunkRef> shuffled;
  shuffled.reserve(chunks.size());
  for (size_t i : detail::permutation(chunks.size(), seed, epoch)) shuffled.push_back(chunks[i]);
  return shuffled;
}

uint64_t dynamic_claim_size(uint64_t remaining, int ranks) {
  const uint64_t parts = 2 * static_cast<uint64_t>(std::max(ranks, 1));
  return std::clamp<uint64_t>((remaining + parts - 1) / parts, 1, kMaxDynamicClaim);
}

PositionRange dynamic_first_range(uint64_t total, int rank, int ranks) {
  if (ranks <= 1) return PositionRange{0, total};
  const uint64_t claim = dynamic_claim_size(total, ranks);
  const auto r = static_cast<uint64_t>(std::max(rank, 0));
  return PositionRange{std::min(total, r * claim), std::min(total, (r + 1) * claim)};
}

uint64_t dynamic_counter_base(uint64_t total, int ranks) {
  if (ranks <= 1) return total;
  const auto count = static_cast<uint64_t>(std::max(ranks, 1));
  return std::min(total, count * dynamic_claim_size(total, ranks));
}

PositionRange dynamic_claimed_range(uint64_t total, int ranks, uint64_t claim,
                                    int64_t counter_end) {
  if (counter_end < 0 || static_cast<uint64_t>(counter_end) < claim) return PositionRange{};
  const uint64_t end = dynamic_counter_base(total, ranks) + static_cast<uint64_t>(counter_end);
  return PositionRange{std::min(total, end - claim), std::min(total, end)};
}

}  // namespace gradwire::data
