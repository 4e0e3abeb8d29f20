// ShardedRecordReader: reads a set of RecordIO files as one data set split across the ranks of a
// job, chunk by chunk, with decoding done ahead on a background thread.
//
// Partitions (ShardedReaderOptions::partition):
//   kStatic  each rank reads its fixed share of whole chunks (assign_chunks: balanced by record
//            count, computed alike on every rank without communication). Deterministic; the
//            position can be saved and restored mid-epoch.
//   kDynamic ranks claim chunks through a SharedCounter (the job's rendezvous store:
//            connect_store_counter), each its own share first, then the others' remaining chunks,
//            so faster ranks read more (how: docs/data.md, "Reading many files across ranks").
//            Every chunk is read by exactly one rank per epoch. Every rank of world_size must
//            read every epoch; ranks end an epoch with different record counts (the training loop
//            must allow that); a position can only be restored at an epoch boundary; chunks
//            claimed by a reader destroyed mid-epoch are not read by anyone in that epoch (unless
//            the readers are elastic, below). A world of one reads everything without the counter.
//
// Elastic jobs (docs/elastic.md, "Reading RecordIO files"): the reader is an elastic::State
// object. It counts, per chunk of the current epoch, the records next_record() returned;
// prepare_commit() (every rank, at every commit of elastic::run) gathers every rank's counts, so
// save() holds the epoch's progress of the whole job; load() takes it back, and reshard() (after
// every membership change) continues the epoch in the new membership with exactly the records not
// consumed as of that commit: whole chunks nobody finished and the rest of partly read ones, split
// among the new ranks by the same partition (dynamic: counter keys that include the generation).
// A record counts as consumed once next_record() returned it: commit after training on it. The
// hooks need libtorch and comm: they are in gradwire_data (gradwire::data), not in the records
// library.
//
// Reading: start_epoch(e) (all ranks with the same e), then next_record() until it returns
// nullopt. One background thread per reader (started with it, reused by every epoch) reads and
// decodes up to prefetch_chunks chunks ahead of the consumer; its errors (damage without
// skip_corrupt, I/O failures, store failures) are thrown by next_record() on the consumer's thread.
// Destruction stops the threads and waits for them (at most one chunk read and one counter round
// trip, which the counter's timeout bounds).
//
// Thread safety: one consumer thread at a time for every method. next_record() blocks until the
// next chunk is decoded.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gradwire/data/recordio_reader.h"
#include "gradwire/data/shared_counter.h"

namespace torch::serialize {
class InputArchive;
class OutputArchive;
}  // namespace torch::serialize

namespace gradwire {
class Communicator;
}

namespace gradwire::data {

class ChunkFile;
struct ChunkRef;
struct DecodedChunk;
namespace detail {
class ChunkClaimer;
}

enum class Partition { kStatic, kDynamic };
const char* to_string(Partition partition);
// "static" or "dynamic"; nullopt otherwise.
std::optional<Partition> parse_partition(std::string_view text);

struct ShardedReaderOptions {
  // This rank and the number of ranks reading. Default: one rank. In an elastic job, reshard()
  // sets both at the start of every generation.
  int rank = 0;
  int world_size = 1;
  Partition partition = Partition::kStatic;
  // kDynamic: the counter all ranks share (required; make_local_counter() for one process).
  std::shared_ptr<SharedCounter> counter;
  // kDynamic: prefix of the counter keys; the same on all ranks, different for each data set read
  // in the same job (e.g. ".../train", ".../test"). Default "gradwire/data/chunks".
  std::string queue_name = "gradwire/data/chunks";
  // Reorder chunks every epoch from (seed, epoch): each share (the segments of kDynamic too).
  // Records keep their order inside a chunk. Default false.
  bool shuffle_chunks = false;
  uint64_t seed = 0;
  // Skip damaged chunks and count them in stats() instead of throwing. Default false.
  bool skip_corrupt = false;
  // Decoded chunks held ahead of the consumer (at least 1). Default 4.
  size_t prefetch_chunks = 4;
  // Read the files through memory maps (RecordReaderOptions::map_file, which says when not to).
  // Default true.
  bool map_files = true;
};

// Where a rank is in an epoch (kStatic: chunks of its share finished, records of the next one).
struct ReaderPosition {
  uint64_t epoch = 0;
  uint64_t chunks_done = 0;
  uint64_t records_done = 0;
  bool operator==(const ReaderPosition& other) const {
    return epoch == other.epoch && chunks_done == other.chunks_done &&
           records_done == other.records_done;
  }
};

class ShardedRecordReader {
 public:
  // Opens every file (reading its index). Throws InvalidArgument for bad options or files that
  // cannot be opened, CorruptRecordsError for damaged files unless skip_corrupt.
  ShardedRecordReader(std::vector<std::string> files, ShardedReaderOptions options);
  ~ShardedRecordReader();
  ShardedRecordReader(const ShardedRecordReader&) = delete;
  ShardedRecordReader& operator=(const ShardedRecordReader&) = delete;

  // Begins epoch `epoch` from its start, abandoning any epoch in progress.
  void start_epoch(uint64_t epoch);
  // Begins `position.epoch` at `position` (kStatic; kDynamic accepts only an epoch start).
  void resume(const ReaderPosition& position);

  // The next record of this rank in the current epoch, or nullopt when the epoch is over for this
  // rank. The view stays valid until the next call. Throws what the background thread met
  // (again on every later call until the next start_epoch).
  std::optional<std::string_view> next_record();

  // The epoch being read (start_epoch, resume, or the one load() brought back); nullopt before.
  std::optional<uint64_t> epoch() const;
  // Position after the records returned so far in this rank's share (in a continuation after
  // reshard(), its share of the rest; resume() takes only positions of a whole epoch's share).
  ReaderPosition position() const;
  // Chunks and records delivered and skipped in the current epoch.
  const ReadStats& stats() const { return stats_; }
  // Damage found when opening files (only with skip_corrupt): lost file tails.
  std::vector<ChunkDamage> open_damages() const;

  // Records per chunk of every file, as read from the indexes.
  const std::vector<std::vector<uint64_t>>& record_counts() const { return record_counts_; }
  // kStatic: the records of this rank's chunks.
  uint64_t static_share_records() const;

  // elastic::State hooks (docs/elastic.md), defined in gradwire_data. Every rank must hold a
  // reader over the same files in the same order.
  //
  // Collective over `communicator` (every rank, at the same point of the same epoch): gathers
  // every rank's records consumed per chunk of the epoch (an allreduce of one integer per chunk;
  // a chunk is read by one rank at a time), so that save() holds the job's progress. Throws
  // InvalidArgument when the ranks are in different epochs.
  void prepare_commit(Communicator& communicator);
  // The epoch and, per chunk, the records consumed in it (as far as this rank knows: the whole
  // job's after prepare_commit) and the files' record counts.
  void save(torch::serialize::OutputArchive& archive) const;
  // Takes back what save() wrote, ending the epoch in progress; reading goes on after reshard().
  // Throws InvalidArgument when the saved reader read other files.
  void load(torch::serialize::InputArchive& archive);
  // Becomes `rank` of `world_size` ranks; `generation`: a number unique to this membership of the
  // job (dynamic: part of the counter keys of every epoch from now on, so that no generation sees
  // another's claims). Ends the epoch in progress and continues it (the one load() brought back,
  // or the current one) with the records not consumed yet (as load() or prepare_commit() left
  // them), split among the new ranks. Every rank of the new membership must call it alike.
  // Throws InvalidArgument when rank is outside world_size.
  void reshard(int rank, int world_size, int64_t generation);

 private:
  struct Epoch;
  struct Worker;
  void stop_epoch();
  // Starts reading epoch `number`: `shares` holds every rank's chunks to read (kStatic: this rank
  // reads its own from `chunks_done`, `records_done`; kDynamic: the segments).
  void start_reading(uint64_t number, const std::vector<std::vector<ChunkRef>>& shares,
                     uint64_t chunks_done, uint64_t records_done);
  // Continues epoch `number` with what consumed_ leaves, split among the current ranks.
  void continue_epoch(uint64_t number);
  size_t chunk_index(const ChunkRef& ref) const;

  std::vector<std::unique_ptr<const ChunkFile>> files_;
  ShardedReaderOptions options_;
  std::vector<std::vector<uint64_t>> record_counts_;
  std::vector<size_t> first_chunk_index_;      // per file: chunk_index of its chunk 0
  std::vector<std::vector<ChunkRef>> shares_;  // every rank's (kDynamic: its segment)
  // Per chunk (chunk_index): records of it consumed in the current epoch, as far as this rank
  // knows (its own, and the job's as of the last prepare_commit or load). Consumer thread only.
  std::vector<uint64_t> consumed_;
  // An epoch load() brought back, to be continued by reshard() (no epoch_ meanwhile).
  std::optional<uint64_t> loaded_epoch_;
  // The last reshard()'s generation: part of the dynamic counter keys once set.
  std::optional<int64_t> generation_;
  // kDynamic: claims the epoch's chunks ahead of the background thread (its own thread).
  std::unique_ptr<detail::ChunkClaimer> claimer_;
  // The background thread, reused by every epoch (declared after what its jobs use).
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<Epoch> epoch_;
  // Memory of consumed chunks kept between epochs (owned by the epoch while one runs).
  std::vector<DecodedChunk> spare_chunks_;
  ReadStats stats_;
};

}  // namespace gradwire::data
