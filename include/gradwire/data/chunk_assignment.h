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
// when about `remaining` are unclaimed among `ranks` ranks: remaining / (4 * ranks), at least 1 and
// at most kMaxDynamicClaim ("guided" self-scheduling: big claims while much is left, single
// chunks at the end, so the ranks still finish within about one chunk of each other while the
// store sees a fraction of the round trips). Pure.
constexpr uint64_t kMaxDynamicClaim = 8;
uint64_t dynamic_claim_size(uint64_t remaining, int ranks);

}  // namespace gradwire::data
