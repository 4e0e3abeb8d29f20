// Which rank reads which chunks: pure functions over the chunks' record counts.
//
// Static partition: assign_chunks() gives every rank whole chunks so that the ranks' record
// totals are as equal as whole chunks allow (largest chunk first to the rank with the fewest
// records; ties go to the lower rank). The result is deterministic: every rank computes the same
// assignment from the same files, with no communication.
//
// Dynamic partition: all ranks walk the same global chunk order (dynamic_chunk_order) and take the
// next unclaimed positions from a shared counter (sharded_reader.h), several at a time while many
// remain (dynamic_claim_size), one at a time towards the end of the epoch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gradwire::data {

// One chunk of one file among the files given to a reader.
struct ChunkRef {
  uint32_t file = 0;   // index into the reader's file list
  uint64_t chunk = 0;  // chunk number inside that file
  uint64_t records = 0;
  bool operator==(const ChunkRef& other) const {
    return file == other.file && chunk == other.chunk && records == other.records;
  }
};

// record_counts[f][c]: records of chunk c of file f. Returns, for each of `ranks` ranks, its
// chunks in file order. Every chunk goes to exactly one rank. After the assignment, any two
// ranks' record totals differ by at most the largest chunk's record count.
// Throws InvalidArgument when ranks < 1.
std::vector<std::vector<ChunkRef>> assign_chunks(
    const std::vector<std::vector<uint64_t>>& record_counts, int ranks);

// Sum of the records of `chunks`.
uint64_t total_records(const std::vector<ChunkRef>& chunks);

// Every chunk of every file in file order, or shuffled by (seed, epoch) when `shuffle` is set;
// the same on every rank for the same arguments.
std::vector<ChunkRef> dynamic_chunk_order(const std::vector<std::vector<uint64_t>>& record_counts,
                                          bool shuffle, uint64_t seed, uint64_t epoch);

// How many consecutive positions of the dynamic order a rank claims with one counter round trip
// when about `remaining` are unclaimed among `ranks` ranks: remaining / (2 * ranks) rounded up, at
// least 1 and at most kMaxDynamicClaim ("guided" self-scheduling: big claims while much is left,
// single chunks for the last 2 * ranks, so the ranks still finish within about one chunk of each
// other while the store sees a few round trips per rank and epoch). Pure.
constexpr uint64_t kMaxDynamicClaim = 16;
uint64_t dynamic_claim_size(uint64_t remaining, int ranks);

// Positions [begin, end) of an epoch's dynamic order.
struct PositionRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end > begin ? end - begin : 0; }
  bool empty() const { return end <= begin; }
  bool operator==(const PositionRange& other) const {
    return begin == other.begin && end == other.end;
  }
};

// Every rank's first claim of an epoch of `total` positions is implicit, so reading starts
// without a counter round trip: rank r of `ranks` owns [r * c, (r + 1) * c) (c =
// dynamic_claim_size(total, ranks)), cut to [0, total). A single rank (ranks <= 1) owns the whole
// order: it has no one to balance with and never needs the counter. Pure.
PositionRange dynamic_first_range(uint64_t total, int rank, int ranks);

// The first position the counter hands out: the end of the implicit first ranges,
// min(total, ranks * c) (total for a single rank). Pure.
uint64_t dynamic_counter_base(uint64_t total, int ranks);

// The positions a claim of `claim` got when adding it to the counter returned `counter_end` (the
// counter's new value): [base + counter_end - claim, base + counter_end) cut to [0, total);
// empty once the order is exhausted or when counter_end < claim (a counter that went backwards:
// nothing is claimed). Pure.
PositionRange dynamic_claimed_range(uint64_t total, int ranks, uint64_t claim, int64_t counter_end);

}  // namespace gradwire::data
