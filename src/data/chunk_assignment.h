// Which rank reads which chunks: pure functions over the chunks' record counts.
//
// Static partition: assign_chunks() gives every rank whole chunks so that the ranks' record
// totals are as equal as whole chunks allow (largest chunk first to the rank with the fewest
// records; ties go to the lower rank). The result is deterministic: every rank computes the same
// assignment from the same files, with no communication.
//
// Dynamic partition (how it claims: docs/data.md, "Reading many files across ranks"): the
// segments, their claim sizes and ClaimSchedule (Note [front and back]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace gradwire::data {

// One chunk of one file among the files given to a reader, or what is left of it to read.
struct ChunkRef {
  uint32_t file = 0;     // index into the reader's file list
  uint64_t chunk = 0;    // chunk number inside that file
  uint64_t records = 0;  // the records to read: all the chunk's, or those from `first` on
  uint64_t first = 0;    // the first record to read (0 but in the continuation of an epoch)
  bool operator==(const ChunkRef& other) const {
    return file == other.file && chunk == other.chunk && records == other.records &&
           first == other.first;
  }
};

// record_counts[f][c]: records of chunk c of file f. Returns, for each of `ranks` ranks, its
// chunks in file order. Every chunk goes to exactly one rank. After the assignment, any two
// ranks' record totals differ by at most the largest chunk's record count.
// Throws InvalidArgument when ranks < 1.
std::vector<std::vector<ChunkRef>> assign_chunks(
    const std::vector<std::vector<uint64_t>>& record_counts, int ranks);

// The same balance for any list of chunks (what is left of an epoch, say), by their `records`:
// shares in file order, every chunk to exactly one rank. Throws InvalidArgument when ranks < 1.
std::vector<std::vector<ChunkRef>> assign_chunk_list(std::vector<ChunkRef> chunks, int ranks);

// What is left of an epoch once consumed[i] records of chunk i were consumed, chunks numbered
// across the files in file order (record_counts as for assign_chunks): every chunk with records
// left, from the next one (ChunkRef::first), in file order. A count at or above the chunk's
// records leaves nothing of it. Throws InvalidArgument when `consumed` does not have one entry
// per chunk. Pure: the continuation of an epoch in a new membership (ShardedRecordReader::reshard).
std::vector<ChunkRef> remaining_chunks(const std::vector<std::vector<uint64_t>>& record_counts,
                                       const std::vector<uint64_t>& consumed);

// Sum of the records of `chunks`.
uint64_t total_records(const std::vector<ChunkRef>& chunks);

// Dynamic claim sizes (Note [claim sizes] in chunk_assignment.cpp). A claim never takes more than
// kMaxDynamicClaim chunks.
constexpr uint64_t kMaxDynamicClaim = 16;
constexpr uint64_t kMinDynamicOwnClaim = 4;

// Chunks a rank claims from the back of another's segment when about `remaining` are unclaimed
// there, among `ranks` ranks: remaining / (2 * ranks) rounded up, 1 to kMaxDynamicClaim, so the
// last chunks go one at a time. Pure.
uint64_t dynamic_claim_size(uint64_t remaining, int ranks);

// Chunks a rank claims from the front of its own segment of `segment_size` chunks (the first,
// implicit claim included): a quarter of the segment, at least `floor` (dynamic_own_claim_floor;
// kMinDynamicOwnClaim for the implicit claim, which every rank must compute alike), 1 to
// kMaxDynamicClaim, and never more than what is left. Pure.
uint64_t dynamic_own_claim_size(uint64_t segment_size, uint64_t floor);

// The least own claim worth a round trip: enough chunks that reading them takes twice a round trip,
// so the claim made ahead arrives in time (Note [claim ahead] in src/data/chunk_claimer.h);
// kMinDynamicOwnClaim to kMaxDynamicClaim. `round_trip` and `per_chunk`: measured averages in one
// unit; 0 when not known yet (then kMinDynamicOwnClaim). Pure.
uint64_t dynamic_own_claim_floor(double round_trip, double per_chunk);

// Positions [begin, end) of the segment of rank `segment`.
struct SegmentRange {
  uint32_t segment = 0;
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end > begin ? end - begin : 0; }
  bool empty() const { return end <= begin; }
  bool operator==(const SegmentRange& other) const {
    return segment == other.segment && begin == other.begin && end == other.end;
  }
};

// One counter add of a ClaimSchedule: `size` positions from the front (the segment's owner) or
// the back (a rank whose own segment is exhausted) of `segment`.
struct SegmentClaim {
  uint32_t segment = 0;
  bool from_back = false;
  uint64_t size = 0;
  // What to add to the segment's counter (Note [front and back]).
  int64_t delta() const;
};

// Note [front and back]: a segment's counter holds two totals in one integer, the front claims'
// in its low 32 bits and the back claims' above them (value = front + back * 2^32), so one atomic
// add tells a claimer where both ends are. The owner's first front claim is implicit: the first
// dynamic_own_claim_size(S, kMinDynamicOwnClaim) positions of its segment of S (all S for a single
// rank), read without a round trip; the front total F counts them too. After its add, a front claim
// of c gets [F - c, F) below S - B, a back claim [S - B, S - B + c) at or above F (F and B: both
// totals as the add left them). Of two claims that overlap, the later one saw the earlier one's
// total and gives the overlap up, so every position goes to exactly one claim, and all have gone
// once F + B >= S.
//
// ClaimSchedule: the claims of one rank in one epoch. Its own segment from the front while it
// lasts (dynamic_own_claim_size), then the others from the back, in the order rank + 1,
// rank + 2, ... (mod ranks): the first claim from another segment takes one position (its
// remaining count is not known yet), later ones dynamic_claim_size of what the owner's next own
// claim would not cover (that much is left to the owner).
// Pure: the caller makes the adds (SharedCounter) and records the answers, one claim at a time.
class ClaimSchedule {
 public:
  // segment_sizes[v]: the positions of rank v's segment. Throws InvalidArgument when `rank` is not
  // an index of segment_sizes.
  ClaimSchedule(std::vector<uint64_t> segment_sizes, int rank);

  // The implicit first positions of this rank's own segment (empty for an empty segment).
  SegmentRange first_range() const;
  // The add to make next, or nullopt when every segment is known to be exhausted.
  // `own_claim_floor`: see dynamic_own_claim_size.
  std::optional<SegmentClaim> next_claim(uint64_t own_claim_floor = kMinDynamicOwnClaim) const;
  // Applies `counter_value`, what the add of `claim` (the last next_claim()) returned; returns the
  // positions the claim got, empty when it came too late.
  SegmentRange record(const SegmentClaim& claim, int64_t counter_value);

 private:
  struct Segment {
    uint64_t size = 0;
    uint64_t implicit = 0;  // the owner's implicit first claim
    uint64_t front = 0;     // F as last seen (implicit included)
    uint64_t back = 0;      // B as last seen
    bool probed = false;    // an add of ours told us F and B
    uint64_t remaining() const;
  };
  std::vector<Segment> segments_;
  uint32_t rank_ = 0;
};

}  // namespace gradwire::data
