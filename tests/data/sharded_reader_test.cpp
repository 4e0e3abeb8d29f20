// ShardedRecordReader: static shares, resume, dynamic claiming (exactly once, with a slow rank,
// in-process and through a real rendezvous store), prefetch errors and shutdown.
#include "gradwire/data/sharded_reader.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "data/chunk_file.h"
#include "gradwire/data/store_counter.h"
#include "recordio_test_files.h"
#include "support/rank_threads.h"

namespace gradwire::data {
namespace {

using testing::read_bytes;
using testing::test_record;
using testing::write_bytes;
using testing::write_test_file;

// Three files of uneven sizes and chunkings: 250 + 64 + 401 records.
struct ThreeFiles {
  testing::TempDir dir;
  std::vector<std::string> paths = {dir.file("a"), dir.file("b"), dir.file("c")};
  std::set<std::string> all;
  ThreeFiles() {
    const uint64_t records[] = {250, 64, 401};
    const uint32_t per_chunk[] = {25, 16, 50};
    for (int f = 0; f < 3; ++f) {
      write_test_file(paths[f], f, records[f], per_chunk[f],
                      f == 1 ? Compression::kZstd : Compression::kNone);
      for (uint64_t i = 0; i < records[f]; ++i) all.insert(test_record(f, i));
    }
  }
};

std::vector<std::string> read_epoch(ShardedRecordReader& reader, uint64_t epoch,
                                    std::chrono::milliseconds per_record = {}) {
  reader.start_epoch(epoch);
  std::vector<std::string> records;
  while (auto record = reader.next_record()) {
    records.emplace_back(*record);
    if (per_record.count() > 0) std::this_thread::sleep_for(per_record);
  }
  return records;
}

// Adds `records` to `seen`, failing on a record read twice.
void add_once(std::multiset<std::string>& seen, const std::vector<std::string>& records) {
  seen.insert(records.begin(), records.end());
}

void expect_exactly(const std::multiset<std::string>& seen, const std::set<std::string>& all) {
  EXPECT_EQ(seen.size(), all.size());
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()), all);
}

ShardedReaderOptions options_for(int rank, int world_size, Partition partition) {
  ShardedReaderOptions options;
  options.rank = rank;
  options.world_size = world_size;
  options.partition = partition;
  options.prefetch_chunks = 2;
  return options;
}

TEST(ShardedReader, StaticSharesCoverEveryRecordOnce) {
  ThreeFiles files;
  for (bool shuffle : {false, true}) {
    std::multiset<std::string> seen;
    for (int rank = 0; rank < 3; ++rank) {
      auto options = options_for(rank, 3, Partition::kStatic);
      options.shuffle_chunks = shuffle;
      ShardedRecordReader reader(files.paths, options);
      const auto records = read_epoch(reader, 0);
      EXPECT_EQ(records.size(), reader.static_share_records());
      EXPECT_EQ(reader.stats().records_read, records.size());
      add_once(seen, records);
    }
    expect_exactly(seen, files.all);
  }
}

TEST(ShardedReader, StaticShuffleChangesOrderPerEpochOnly) {
  ThreeFiles files;
  auto options = options_for(0, 2, Partition::kStatic);
  options.shuffle_chunks = true;
  ShardedRecordReader reader(files.paths, options);
  const auto epoch0 = read_epoch(reader, 0);
  const auto epoch1 = read_epoch(reader, 1);
  EXPECT_NE(epoch0, epoch1);
  EXPECT_EQ(std::multiset<std::string>(epoch0.begin(), epoch0.end()),
            std::multiset<std::string>(epoch1.begin(), epoch1.end()));
  EXPECT_EQ(read_epoch(reader, 0), epoch0);
}

TEST(ShardedReader, StaticResumeContinuesWhereTheSavedReaderStopped) {
  ThreeFiles files;
  auto options = options_for(1, 2, Partition::kStatic);
  options.shuffle_chunks = true;
  ShardedRecordReader reference(files.paths, options);
  const auto whole = read_epoch(reference, 3);
  for (size_t stop_after : {size_t{0}, size_t{1}, size_t{25}, size_t{137}, whole.size()}) {
    ShardedRecordReader first(files.paths, options);
    first.start_epoch(3);
    for (size_t i = 0; i < stop_after; ++i) ASSERT_TRUE(first.next_record());
    const ReaderPosition saved = first.position();
    EXPECT_EQ(saved.epoch, 3u);

    ShardedRecordReader second(files.paths, options);
    second.resume(saved);
    EXPECT_EQ(second.position(), saved);
    std::vector<std::string> rest;
    while (auto record = second.next_record()) rest.emplace_back(*record);
    ASSERT_EQ(stop_after + rest.size(), whole.size()) << "stopped after " << stop_after;
    for (size_t i = 0; i < rest.size(); ++i) EXPECT_EQ(rest[i], whole[stop_after + i]);
  }
}

TEST(ShardedReader, DynamicReadsEveryChunkOnceWithASlowRank) {
  ThreeFiles files;
  auto counter = make_local_counter();
  for (bool shuffle : {false, true}) {
    for (uint64_t epoch : {0u, 1u}) {
      std::vector<std::vector<std::string>> per_rank(3);
      std::vector<std::thread> ranks;
      for (int rank = 0; rank < 3; ++rank) {
        ranks.emplace_back([&, rank] {
          auto options = options_for(rank, 3, Partition::kDynamic);
          options.counter = counter;
          options.shuffle_chunks = shuffle;
          options.queue_name = shuffle ? "shuffled" : "plain";
          ShardedRecordReader reader(files.paths, options);
          // Rank 2 is slow: it sleeps on every record it takes.
          per_rank[rank] = read_epoch(reader, epoch, std::chrono::milliseconds(rank == 2 ? 1 : 0));
        });
      }
      for (auto& thread : ranks) thread.join();
      std::multiset<std::string> seen;
      for (const auto& records : per_rank) add_once(seen, records);
      expect_exactly(seen, files.all);
    }
  }
}

TEST(ShardedReader, DynamicThroughTheRendezvousStore) {
  ThreeFiles files;
  std::mutex mutex;
  std::multiset<std::string> seen;
  gradwire::testing::run_ranks(2, [&](int rank, World& world) {
    auto options = options_for(rank, 2, Partition::kDynamic);
    options.counter = connect_store_counter(world.info(), std::chrono::seconds(20));
    ShardedRecordReader reader(files.paths, options);
    for (uint64_t epoch : {0u, 1u}) {
      const auto records = read_epoch(reader, epoch, std::chrono::milliseconds(rank == 1 ? 1 : 0));
      std::lock_guard<std::mutex> lock(mutex);
      add_once(seen, records);
    }
    world.communicator()->barrier()->wait();  // rank 0's store lives until both are done
  });
  std::multiset<std::string> once_per_epoch;
  for (const auto& record : files.all) {
    once_per_epoch.insert(record);
    once_per_epoch.insert(record);
  }
  EXPECT_EQ(seen, once_per_epoch);
}

TEST(ShardedReader, DynamicInAWorldOfOneNeedsNoStore) {
  // A world of one rendezvouses in process and hosts no store (master_port 0).
  WorldInfo one;
  ASSERT_EQ(one.world_size, 1);
  ASSERT_EQ(one.master_port, 0);
  auto options = options_for(0, 1, Partition::kDynamic);
  options.counter = connect_store_counter(one, std::chrono::seconds(1));
  EXPECT_EQ(options.counter->add("k", 1), 1);
  ThreeFiles files;
  ShardedRecordReader reader(files.paths, options);
  std::multiset<std::string> seen;
  add_once(seen, read_epoch(reader, 0, std::chrono::milliseconds(0)));
  expect_exactly(seen, files.all);
}

TEST(ShardedReader, DamagedChunkThrowsOnTheConsumerOrIsSkipped) {
  ThreeFiles files;
  const uint64_t offset = ChunkFile(files.paths[2]).chunks()[4].offset;
  std::string bytes = read_bytes(files.paths[2]);
  bytes[offset + kChunkHeaderSize + 10] ^= 1;
  write_bytes(files.paths[2], bytes);

  ShardedRecordReader strict(files.paths, options_for(0, 1, Partition::kStatic));
  strict.start_epoch(0);
  auto drain = [&] {
    while (strict.next_record()) {
    }
  };
  try {
    drain();
    ADD_FAILURE() << "no error";
  } catch (const CorruptRecordsError& e) {
    EXPECT_EQ(e.damage().file, files.paths[2]);
    EXPECT_EQ(e.damage().chunk, 4u);
    EXPECT_EQ(e.damage().byte_offset, offset);
  }
  EXPECT_THROW(drain(), CorruptRecordsError) << "the same error again";

  auto options = options_for(0, 1, Partition::kStatic);
  options.skip_corrupt = true;
  ShardedRecordReader skipping(files.paths, options);
  const auto records = read_epoch(skipping, 0);
  EXPECT_EQ(records.size(), files.all.size() - 50);
  EXPECT_EQ(skipping.stats().chunks_skipped, 1u);
  EXPECT_EQ(skipping.stats().records_skipped, 50u);
}

TEST(ShardedReader, StopsCleanlyMidEpochAndRejectsBadOptions) {
  ThreeFiles files;
  {
    auto options = options_for(0, 1, Partition::kStatic);
    options.prefetch_chunks = 1;
    ShardedRecordReader reader(files.paths, options);
    reader.start_epoch(0);
    ASSERT_TRUE(reader.next_record());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the worker fill the queue
  }  // destroyed with the worker blocked on a full queue
  EXPECT_THROW(ShardedRecordReader(files.paths, options_for(0, 1, Partition::kDynamic)),
               InvalidArgument);
  EXPECT_THROW(ShardedRecordReader(files.paths, options_for(2, 2, Partition::kStatic)),
               InvalidArgument);
  auto dynamic = options_for(0, 1, Partition::kDynamic);
  dynamic.counter = make_local_counter();
  ShardedRecordReader reader(files.paths, dynamic);
  EXPECT_THROW(reader.resume(ReaderPosition{0, 1, 0}), InvalidArgument);
  EXPECT_THROW(reader.next_record(), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::data
