#include "gradwire/data/sharded_reader.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "chunk_claimer.h"
#include "chunk_file.h"
#include "common/enum_names.h"
#include "gradwire/common/timeline.h"
#include "shuffle.h"

namespace gradwire::data {

namespace {
constexpr EnumNames<Partition, 2> kPartitionNames{
    {{{Partition::kStatic, "static"}, {Partition::kDynamic, "dynamic"}}}};
}  // namespace

const char* to_string(Partition partition) { return kPartitionNames.name(partition); }

std::optional<Partition> parse_partition(std::string_view text) {
  return kPartitionNames.parse(text);
}

// One epoch: the background reader and the consumer's place in it.
struct ShardedRecordReader::Epoch {
  // What the background thread hands over, in order.
  struct Item {
    enum class Kind { kChunk, kSkipped, kError, kEnd } kind = Kind::kEnd;
    ChunkRef ref;  // kChunk, kSkipped: which chunk, and from which record
    DecodedChunk chunk;
    ChunkDamage damage;
    std::exception_ptr error;
  };

  uint64_t number = 0;
  std::vector<ChunkRef> order;                  // kStatic: the share in reading order
  std::vector<std::vector<ChunkRef>> segments;  // kDynamic: every rank's share in reading order

  // Shared with the background thread. Note [hand-off]: waking a sleeping thread costs a system
  // call and, on a busy or virtualized machine, far more than handing over one chunk, so both
  // sides wake the other once per `handoff` chunks rather than per chunk: a consumer that found
  // the queue empty sleeps until `handoff` items (or the epoch's last) are queued; a producer that
  // found it full sleeps until `handoff` slots are free. A side that finds what it needs does not
  // sleep, so a consumer never waits while an item is queued.
  std::mutex mutex;
  std::condition_variable item_queued;  // the consumer waits on it
  std::condition_variable slot_freed;   // the background thread waits on it
  std::deque<Item> items;               // guarded by mutex
  std::vector<DecodedChunk> spares;     // guarded by mutex: consumed chunks, memory to reuse
  bool consumer_waiting = false;        // guarded by mutex
  bool producer_waiting = false;        // guarded by mutex
  size_t capacity = 1;                  // items queued at most (prefetch_chunks)
  size_t handoff = 1;                   // max(1, capacity / 2) (Note [hand-off])
  size_t max_spares = 0;
  std::atomic<bool> stop{false};

  // Consumer side only.
  std::optional<DecodedChunk> current;
  size_t current_index = 0;  // chunk_index of current
  size_t next_in_current = 0;
  uint64_t chunks_done = 0;
  uint64_t records_done = 0;
  uint64_t skip_in_first_chunk = 0;
  bool finished = false;
  std::exception_ptr error;

  // Guarded by mutex: enough queued for a sleeping consumer to be worth waking.
  bool worth_waking_consumer() const {
    if (items.size() >= handoff) return true;
    return !items.empty() &&
           (items.back().kind == Item::Kind::kEnd || items.back().kind == Item::Kind::kError);
  }

  // Background thread: waits for room; false when asked to stop.
  bool push(Item item) {
    std::unique_lock<std::mutex> lock(mutex);
    if (items.size() >= capacity) {
      producer_waiting = true;
      slot_freed.wait(lock, [&] { return stop.load() || items.size() + handoff <= capacity; });
      producer_waiting = false;
    }
    if (stop) return false;
    items.push_back(std::move(item));
    if (consumer_waiting && worth_waking_consumer()) item_queued.notify_one();
    return true;
  }

  // Consumer: hands a finished chunk's memory back to the background thread.
  void recycle(DecodedChunk chunk) {
    std::lock_guard<std::mutex> lock(mutex);
    if (spares.size() < max_spares) spares.push_back(std::move(chunk));
  }

  // Background thread: a spare chunk to read into, or {} when there is none.
  DecodedChunk take_spare() {
    std::lock_guard<std::mutex> lock(mutex);
    if (spares.empty()) return DecodedChunk{};
    DecodedChunk spare = std::move(spares.back());
    spares.pop_back();
    return spare;
  }

  // Consumer: the next item, waiting for the background thread when none is queued (a "data
  // wait" span on the timeline, recorded once the lock is released).
  Item pop() {
    std::unique_lock<std::mutex> lock(mutex);
    int64_t wait_start_ns = -1;
    if (items.empty()) {
      if (timeline::enabled()) wait_start_ns = timeline::now_ns();
      consumer_waiting = true;
      item_queued.wait(lock, [&] { return worth_waking_consumer(); });
      consumer_waiting = false;
    }
    Item item = std::move(items.front());
    items.pop_front();
    if (producer_waiting && items.size() + handoff <= capacity) slot_freed.notify_one();
    lock.unlock();
    if (wait_start_ns >= 0) {
      timeline::complete("data wait", "data", wait_start_ns, timeline::now_ns(),
                         {{"waited_for", "the next prefetched chunk"},
                          {"epoch", number},
                          {"chunks_done", chunks_done},
                          {"prefetch_chunks", static_cast<uint64_t>(capacity)}});
    }
    return item;
  }

  // Consumer: asks the background thread to stop and wakes it wherever it waits.
  void request_stop() {
    std::lock_guard<std::mutex> lock(mutex);
    stop = true;
    slot_freed.notify_all();
  }
};

// The reader's background thread, started with the reader and reused by every epoch (starting a
// thread per epoch costs more than a whole small epoch's hand-offs). Runs one job at a time; jobs
// never throw (the epoch's job hands its errors to the consumer).
struct ShardedRecordReader::Worker {
  std::mutex mutex;
  std::condition_variable wake;  // a job or shutdown
  std::condition_variable idle;  // the job finished
  std::function<void()> job;     // guarded by mutex: the next job
  bool running = false;          // guarded by mutex
  bool shutdown = false;         // guarded by mutex
  std::thread thread;

  Worker() : thread([this] { loop(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      shutdown = true;
    }
    wake.notify_all();
    thread.join();
  }

  void run(std::function<void()> next_job) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      GRADWIRE_CHECK(!job && !running);
      job = std::move(next_job);
    }
    wake.notify_one();
  }

  // Blocks until no job runs; the caller has asked the running one to stop (it returns within
  // one chunk read or one counter round trip).
  void wait_idle() {
    std::unique_lock<std::mutex> lock(mutex);
    idle.wait(lock, [&] { return !job && !running; });
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      wake.wait(lock, [&] { return shutdown || job; });
      if (!job) return;  // shutdown
      std::function<void()> current = std::move(job);
      job = nullptr;
      running = true;
      lock.unlock();
      current();
      lock.lock();
      running = false;
      idle.notify_all();
    }
  }
};

ShardedRecordReader::ShardedRecordReader(std::vector<std::string> files,
                                         ShardedReaderOptions options)
    : options_(std::move(options)) {
  if (options_.world_size < 1 || options_.rank < 0 || options_.rank >= options_.world_size) {
    throw InvalidArgument("gradwire: ShardedRecordReader rank " + std::to_string(options_.rank) +
                          " is outside world size " + std::to_string(options_.world_size));
  }
  if (options_.partition == Partition::kDynamic && !options_.counter) {
    throw InvalidArgument(
        "gradwire: the dynamic partition needs ShardedReaderOptions::counter "
        "(connect_store_counter "
        "for a job, make_local_counter for one process)");
  }
  if (files.empty()) {
    throw InvalidArgument("gradwire: ShardedRecordReader needs at least one RecordIO file");
  }
  options_.prefetch_chunks = std::max<size_t>(1, options_.prefetch_chunks);
  for (const std::string& path : files) {
    RecordReaderOptions file_options;
    file_options.skip_corrupt = options_.skip_corrupt;
    file_options.map_file = options_.map_files;
    files_.push_back(std::make_unique<const ChunkFile>(path, file_options));
    std::vector<uint64_t> counts;
    for (const IndexEntry& entry : files_.back()->chunks()) counts.push_back(entry.record_count);
    first_chunk_index_.push_back(
        first_chunk_index_.empty() ? 0 : first_chunk_index_.back() + record_counts_.back().size());
    record_counts_.push_back(std::move(counts));
  }
  consumed_.assign(first_chunk_index_.back() + record_counts_.back().size(), 0);
  shares_ = assign_chunks(record_counts_, options_.world_size);
  if (options_.partition == Partition::kDynamic) {
    claimer_ = std::make_unique<detail::ChunkClaimer>(options_.counter, options_.rank);
  }
  worker_ = std::make_unique<Worker>();
}

ShardedRecordReader::~ShardedRecordReader() { stop_epoch(); }

size_t ShardedRecordReader::chunk_index(const ChunkRef& ref) const {
  return first_chunk_index_[ref.file] + static_cast<size_t>(ref.chunk);
}

std::optional<uint64_t> ShardedRecordReader::epoch() const {
  if (epoch_) return epoch_->number;
  return loaded_epoch_;
}

uint64_t ShardedRecordReader::static_share_records() const {
  return total_records(shares_[static_cast<size_t>(options_.rank)]);
}

std::vector<ChunkDamage> ShardedRecordReader::open_damages() const {
  std::vector<ChunkDamage> damages;
  for (const auto& file : files_) {
    if (file->open_damage()) damages.push_back(*file->open_damage());
  }
  return damages;
}

void ShardedRecordReader::stop_epoch() {
  if (!epoch_) return;
  epoch_->request_stop();
  if (claimer_) claimer_->cancel();  // a worker waiting for a claim returns
  worker_->wait_idle();
  spare_chunks_ = std::move(epoch_->spares);  // the next epoch reads into them
  epoch_.reset();
}

void ShardedRecordReader::start_epoch(uint64_t epoch) { resume(ReaderPosition{epoch, 0, 0}); }

void ShardedRecordReader::resume(const ReaderPosition& position) {
  const bool dynamic = options_.partition == Partition::kDynamic;
  if (dynamic && (position.chunks_done != 0 || position.records_done != 0)) {
    throw InvalidArgument(
        "gradwire: the dynamic partition can only resume at the start of an epoch (asked for "
        "epoch " +
        std::to_string(position.epoch) + ", chunk " + std::to_string(position.chunks_done) +
        "); restart the epoch or use the static partition");
  }
  stop_epoch();
  loaded_epoch_.reset();
  std::fill(consumed_.begin(), consumed_.end(), 0);
  start_reading(position.epoch, shares_, position.chunks_done, position.records_done);
  // What the skipped part of the share held counts as consumed by this rank.
  for (uint64_t i = 0; i < position.chunks_done; ++i) {
    const ChunkRef& ref = epoch_->order[static_cast<size_t>(i)];
    consumed_[chunk_index(ref)] = ref.first + ref.records;
  }
  if (position.chunks_done < epoch_->order.size()) {
    consumed_[chunk_index(epoch_->order[static_cast<size_t>(position.chunks_done)])] =
        position.records_done;
  }
}

void ShardedRecordReader::continue_epoch(uint64_t number) {
  stop_epoch();
  loaded_epoch_.reset();
  start_reading(number,
                assign_chunk_list(remaining_chunks(record_counts_, consumed_), options_.world_size),
                0, 0);
}

void ShardedRecordReader::start_reading(uint64_t number,
                                        const std::vector<std::vector<ChunkRef>>& shares,
                                        uint64_t chunks_done, uint64_t records_done) {
  const bool dynamic = options_.partition == Partition::kDynamic;
  stop_epoch();
  stats_ = ReadStats{};
  auto epoch = std::make_unique<Epoch>();
  epoch->number = number;
  // Chunks in flight at most: prefetched ones, the one being read and the consumer's.
  epoch->max_spares = options_.prefetch_chunks + 2;
  epoch->capacity = options_.prefetch_chunks;
  epoch->handoff = std::max<size_t>(1, options_.prefetch_chunks / 2);
  epoch->spares = std::move(spare_chunks_);
  spare_chunks_.clear();
  // Both partitions read each share in the same order: file order or shuffled by (seed, epoch).
  auto in_reading_order = [&](const std::vector<ChunkRef>& share) {
    if (!options_.shuffle_chunks) return share;
    std::vector<ChunkRef> order(share.size());
    const std::vector<size_t> permutation =
        detail::permutation(share.size(), options_.seed, number);
    for (size_t i = 0; i < share.size(); ++i) order[i] = share[permutation[i]];
    return order;
  };
  std::vector<uint64_t> segment_sizes;
  if (dynamic) {
    for (const auto& share : shares) {
      epoch->segments.push_back(in_reading_order(share));
      segment_sizes.push_back(share.size());
    }
  } else {
    epoch->order = in_reading_order(shares[static_cast<size_t>(options_.rank)]);
  }
  if (chunks_done > epoch->order.size()) {
    throw InvalidArgument("gradwire: resume position chunk " + std::to_string(chunks_done) +
                          " is past this rank's " + std::to_string(epoch->order.size()) +
                          " chunks");
  }
  epoch->chunks_done = chunks_done;
  epoch->records_done = records_done;
  epoch->skip_in_first_chunk = records_done;

  Epoch* state = epoch.get();
  // Once resharded, the generation is part of the keys: a generation never meets the claims of
  // another, even for an epoch both began (one rolled back to a commit before it).
  std::string key = options_.queue_name + "/epoch/" + std::to_string(number);
  if (generation_) key += "/g" + std::to_string(*generation_);
  detail::ChunkClaimer* claimer = claimer_.get();
  if (dynamic) claimer->start_epoch(key, std::move(segment_sizes));
  worker_->run([this, state, dynamic, claimer, first = chunks_done] {
    using Kind = Epoch::Item::Kind;
    if (timeline::enabled()) timeline::name_thread("data prefetch");
    try {
      ChunkBuffers buffers;
      auto read = [&](const ChunkRef& ref) {
        timeline::Span span("prefetch chunk", "data");
        buffers.recycled = state->take_spare();
        ChunkRead got = files_[ref.file]->try_read_chunk(ref.chunk, buffers);
        if (span.active()) {
          span.arg({"chunk", static_cast<uint64_t>(chunk_index(ref))});
          span.arg({"file", static_cast<uint64_t>(ref.file)});
          span.arg({"epoch", state->number});
          if (got.chunk) {
            span.arg({"bytes", static_cast<uint64_t>(got.chunk->bytes().size())});
            span.arg({"records", static_cast<uint64_t>(got.chunk->size())});
          } else {
            span.arg({"damaged", true});
          }
          span.end();  // before the hand-off, which may wait for room
        }
        Epoch::Item item;
        item.ref = ref;
        if (got.damage && !options_.skip_corrupt) {
          item.kind = Kind::kError;
          item.error = std::make_exception_ptr(CorruptRecordsError(*got.damage));
        } else if (got.damage) {
          item.kind = Kind::kSkipped;
          item.damage = std::move(*got.damage);
        } else {
          item.kind = Kind::kChunk;
          item.chunk = std::move(*got.chunk);
        }
        const bool error = item.kind == Kind::kError;
        return state->push(std::move(item)) && !error;
      };
      if (dynamic) {
        // Ranges of the segments claimed one ahead (chunk_claimer.h, Note [claim ahead]).
        while (true) {
          // Waits when the claim made ahead has not come back yet (Note [claim ahead]).
          timeline::Span claim_span("next claim", "data");
          const std::optional<SegmentRange> range = claimer->next();
          if (claim_span.active() && range) {
            claim_span.arg({"segment", range->segment});
            claim_span.arg({"chunks", range->size()});
          }
          claim_span.end();
          if (!range) break;
          const std::vector<ChunkRef>& segment = state->segments[range->segment];
          for (uint64_t i = range->begin; i < range->end && !state->stop; ++i) {
            if (!read(segment[static_cast<size_t>(i)])) return;
          }
        }
      } else {
        for (size_t i = first; i < state->order.size() && !state->stop; ++i) {
          if (!read(state->order[i])) return;
        }
      }
      state->push(Epoch::Item{});  // kEnd
    } catch (...) {
      Epoch::Item item;
      item.kind = Kind::kError;
      item.error = std::current_exception();
      state->push(std::move(item));
    }
  });
  epoch_ = std::move(epoch);
}

std::optional<std::string_view> ShardedRecordReader::next_record() {
  if (!epoch_ && loaded_epoch_) {
    if (options_.world_size > 1) {
      throw InvalidArgument(
          "gradwire: a ShardedRecordReader of several ranks continues a loaded epoch after "
          "reshard(rank, world_size, generation) on every rank (elastic::run calls it)");
    }
    continue_epoch(*loaded_epoch_);
  }
  if (!epoch_) {
    throw InvalidArgument("gradwire: ShardedRecordReader::next_record before start_epoch()");
  }
  Epoch& epoch = *epoch_;
  if (epoch.error) std::rethrow_exception(epoch.error);
  using Kind = Epoch::Item::Kind;
  while (!epoch.current || epoch.next_in_current >= epoch.current->size()) {
    if (epoch.current) {
      epoch.recycle(std::move(*epoch.current));
      epoch.current.reset();
      ++epoch.chunks_done;
      epoch.records_done = 0;
    }
    if (epoch.finished) return std::nullopt;
    Epoch::Item item = epoch.pop();
    switch (item.kind) {
      case Kind::kChunk:
        epoch.current = std::move(item.chunk);
        epoch.current_index = chunk_index(item.ref);
        epoch.next_in_current =
            std::min<uint64_t>(item.ref.first + epoch.skip_in_first_chunk, epoch.current->size());
        ++stats_.chunks_read;
        break;
      case Kind::kSkipped:
        stats_.add_skipped(item.damage);
        consumed_[chunk_index(item.ref)] = record_counts_[item.ref.file][item.ref.chunk];
        ++epoch.chunks_done;
        epoch.records_done = 0;
        break;
      case Kind::kError:
        epoch.error = item.error;
        std::rethrow_exception(epoch.error);
      case Kind::kEnd:
        epoch.finished = true;
        return std::nullopt;
    }
    epoch.skip_in_first_chunk = 0;
  }
  ++epoch.records_done;
  ++stats_.records_read;
  consumed_[epoch.current_index] = epoch.next_in_current + 1;
  return epoch.current->record(epoch.next_in_current++);
}

ReaderPosition ShardedRecordReader::position() const {
  if (!epoch_) return ReaderPosition{};
  return ReaderPosition{epoch_->number, epoch_->chunks_done, epoch_->records_done};
}

}  // namespace gradwire::data
