// ShardedRecordReader on the timeline (docs/timeline.md, category "data"): each chunk its
// background thread reads is a "prefetch chunk" span on the "data prefetch" track, and the
// consumer's waits for it are "data wait" spans; the dynamic partition's claims are "next claim"
// spans there and "claim chunks" spans (counter round trips) on the "data claims" track.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/timeline_merge.h"
#include "gradwire/common/timeline.h"
#include "gradwire/data/sharded_reader.h"
#include "gradwire/data/shared_counter.h"
#include "recordio_test_files.h"

namespace gradwire::data {
namespace sharded_reader_timeline_test {

using nlohmann::json;

// The events of a closed process file, as merge reads it.
json read_trace_events(const std::string& path) {
  timeline::ProcessTrace trace = timeline::read_process_trace(path);
  EXPECT_TRUE(trace.closed && trace.dropped_lines == 0) << path;
  return json(std::move(trace.events));
}

TEST(ShardedReaderTimeline, PrefetchedChunksAndTheConsumersWaits) {
  testing::TempDir dir;
  const std::string path = dir.file("records");
  constexpr int kChunks = 4;
  constexpr int kPerChunk = 50;
  constexpr int kEpochs = 3;
  write_test_file(path, 0, kChunks * kPerChunk, kPerChunk, Compression::kZstd);
  const std::string trace = dir.file("trace.json.d/rank-0.gwtl");
  timeline::start(trace, "rank 0");
  uint64_t records = 0;
  {
    ShardedReaderOptions options;
    options.prefetch_chunks = 1;
    ShardedRecordReader reader({path}, options);
    // Each epoch's first record is asked for at once: the consumer (almost) always waits for
    // the background thread to read the first chunk.
    for (uint64_t epoch = 0; epoch < kEpochs; ++epoch) {
      reader.start_epoch(epoch);
      while (reader.next_record()) ++records;
    }
  }
  timeline::stop();
  EXPECT_EQ(records, uint64_t{kEpochs * kChunks * kPerChunk});

  const json events = read_trace_events(trace);
  std::map<int64_t, std::string> thread_names;
  std::vector<json> prefetches;
  std::vector<json> waits;
  for (const json& event : events) {
    const std::string name = event.value("name", "");
    if (event["ph"] == "M" && name == "thread_name")
      thread_names[event["tid"]] = event["args"]["name"];
    if (event["ph"] == "X" && name == "prefetch chunk") prefetches.push_back(event);
    if (event["ph"] == "X" && name == "data wait") waits.push_back(event);
  }
  ASSERT_EQ(prefetches.size(), size_t{kEpochs * kChunks});
  std::set<uint64_t> chunks;
  for (const json& prefetch : prefetches) {
    EXPECT_EQ(prefetch["cat"], "data");
    EXPECT_EQ(thread_names[prefetch["tid"]], "data prefetch");
    EXPECT_EQ(prefetch["args"]["records"], kPerChunk);
    EXPECT_GT(prefetch["args"]["bytes"].get<uint64_t>(), uint64_t{kPerChunk});
    EXPECT_EQ(prefetch["args"]["file"], 0);
    chunks.insert(prefetch["args"]["chunk"].get<uint64_t>());
  }
  EXPECT_EQ(chunks, (std::set<uint64_t>{0, 1, 2, 3}));
  ASSERT_FALSE(waits.empty());
  for (const json& wait : waits) {
    EXPECT_EQ(wait["cat"], "data");
    EXPECT_NE(wait["tid"], prefetches.front()["tid"]);  // the consumer's track
    EXPECT_EQ(wait["args"]["waited_for"], "the next prefetched chunk");
    EXPECT_LT(wait["args"]["epoch"].get<uint64_t>(), uint64_t{kEpochs});
    EXPECT_EQ(wait["args"]["prefetch_chunks"], 1);
  }
}

TEST(ShardedReaderTimeline, DynamicClaimsAreSpansOnTheirThreads) {
  testing::TempDir dir;
  const std::string path = dir.file("records");
  constexpr int kChunks = 40;
  write_test_file(path, 0, kChunks * 4, 4);
  const std::string trace = dir.file("trace.json.d/bench.gwtl");
  timeline::start(trace, "bench");
  std::shared_ptr<SharedCounter> counter = make_local_counter();
  std::vector<uint64_t> records(2, 0);
  {
    std::vector<std::thread> ranks;
    for (int rank = 0; rank < 2; ++rank) {
      ranks.emplace_back([&, rank] {
        ShardedReaderOptions options;
        options.rank = rank;
        options.world_size = 2;
        options.partition = Partition::kDynamic;
        options.counter = counter;
        ShardedRecordReader reader({path}, options);
        reader.start_epoch(0);
        while (reader.next_record()) ++records[static_cast<size_t>(rank)];
      });
    }
    for (std::thread& thread : ranks) thread.join();
  }
  timeline::stop();
  EXPECT_EQ(records[0] + records[1], uint64_t{kChunks * 4});

  std::map<int64_t, std::string> thread_names;
  uint64_t claimed = 0;
  size_t round_trips = 0;
  const json events = read_trace_events(trace);
  for (const json& event : events) {
    if (event["ph"] == "M" && event["name"] == "thread_name") {
      thread_names[event["tid"]] = event["args"]["name"];
    }
  }
  for (const json& event : events) {
    if (event["ph"] != "X") continue;
    if (event["name"] == "next claim") {
      EXPECT_EQ(thread_names[event["tid"]], "data prefetch");
      // The last call of the epoch finds nothing left: no range, no args.
      if (event.contains("args")) claimed += event["args"]["chunks"].get<uint64_t>();
    }
    if (event["name"] == "claim chunks") {
      EXPECT_EQ(thread_names[event["tid"]], "data claims");
      EXPECT_TRUE(event["args"].contains("segment") && event["args"].contains("from_back"));
      ++round_trips;
    }
  }
  EXPECT_EQ(claimed, uint64_t{kChunks});  // every range handed out, once
  EXPECT_GT(round_trips, 0u);
}

}  // namespace sharded_reader_timeline_test
}  // namespace gradwire::data
