// ShardedRecordReader on the timeline (docs/timeline.md, category "data"): each chunk its
// background thread reads is a "prefetch chunk" span on the "data prefetch" track, and the
// consumer's waits for it are "data wait" spans.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "gradwire/common/timeline.h"
#include "gradwire/data/sharded_reader.h"
#include "recordio_test_files.h"

namespace gradwire::data {
namespace sharded_reader_timeline_test {

using nlohmann::json;

TEST(ShardedReaderTimeline, PrefetchedChunksAndTheConsumersWaits) {
  testing::TempDir dir;
  const std::string path = dir.file("records");
  constexpr int kChunks = 4;
  constexpr int kPerChunk = 50;
  constexpr int kEpochs = 3;
  write_test_file(path, 0, kChunks * kPerChunk, kPerChunk, Compression::kZstd);
  const std::string trace = dir.file("trace.json.d/rank-0.json");
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

  std::ifstream in(trace);
  const json events = json::parse(in);
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

}  // namespace sharded_reader_timeline_test
}  // namespace gradwire::data
