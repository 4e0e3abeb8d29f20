// The server's table registry: creators arriving together build a table once (the process's peak
// memory grows by about one table, not by one per creator), a failed build leaves nothing, and
// the limits on tables held and their bytes count restored tables and hold under concurrency.
#include "ps/server/table_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gradwire/common/error.h"

namespace gradwire::ps {
namespace {

// This process's peak resident memory (VmHWM) in bytes; -1 when /proc cannot tell.
int64_t peak_resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

// Starts a new peak at the current resident size (Linux: "5" to clear_refs); false when refused.
bool reset_peak() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return clear.good();
}

TableConfig big_table() {
  TableConfig config;
  config.name = "big";
  config.num_rows = 1 << 17;
  config.dim = 256;  // 128 MiB of float32 rows, SGD without momentum: no optimizer state
  config.optimizer.kind = OptimizerKind::kSgd;
  config.initializer.kind = InitializerKind::kUniform;
  config.mode = UpdateMode::kSync;
  config.num_trainers = 8;
  return config;
}

TEST(TableRegistry, EightConcurrentCreatorsBuildTheTableOnce) {
  constexpr int64_t kTableBytes = int64_t{1} << 27;
  TableRegistry registry;
  const TableConfig config = big_table();
  if (!reset_peak()) GTEST_SKIP() << "/proc/self/clear_refs cannot reset the peak here";
  const int64_t before = peak_resident_bytes();
  std::vector<CreatedTable> results(8);
  std::vector<std::thread> creators;
  for (int i = 0; i < 8; ++i) {
    creators.emplace_back([&, i] { results[i] = registry.create(config, 0, 1); });
  }
  for (auto& thread : creators) thread.join();
  const int64_t grown = peak_resident_bytes() - before;
  int created = 0;
  for (const CreatedTable& result : results) {
    EXPECT_EQ(result.shard, results.front().shard);
    created += result.created ? 1 : 0;
  }
  EXPECT_EQ(created, 1);
  // One table is 128 MiB; eight builds would have been about 1 GiB.
  EXPECT_GT(grown, kTableBytes / 2);
  EXPECT_LT(grown, 2 * kTableBytes) << "peak grew by " << grown << " bytes";
}

TEST(TableRegistry, ADifferentConfigIsRefusedAndTheTableStays) {
  TableRegistry registry;
  TableConfig config = big_table();
  config.num_rows = 10;
  config.dim = 2;
  const CreatedTable first = registry.create(config, 0, 1);
  TableConfig other = config;
  other.optimizer.lr = 0.5;
  EXPECT_THROW(registry.create(other, 0, 1), InvalidArgument);
  EXPECT_THROW(registry.create(config, 1, 2), InvalidArgument);
  const CreatedTable again = registry.create(config, 0, 1);
  EXPECT_EQ(again.shard, first.shard);
  EXPECT_FALSE(again.created);
}

TEST(TableRegistry, ARestoredSnapshotWithAnotherConfigIsKept) {
  TableRegistry registry;
  TableConfig config = big_table();
  config.num_rows = 10;
  config.dim = 2;
  std::vector<ShardSnapshot> snapshots;
  for (int index = 0; index < 2; ++index) {
    ShardSnapshot snapshot = TableShard(config, index, 2).snapshot();
    snapshot.step = 4;
    snapshots.push_back(snapshot);
  }
  registry.add_restored(std::move(snapshots));
  EXPECT_EQ(registry.find(config.name), nullptr);  // two shards: waits for CreateTable
  TableConfig other = config;
  other.optimizer.lr = 0.5;
  EXPECT_THROW(registry.create(other, 1, 2), InvalidArgument);
  const CreatedTable restored = registry.create(config, 1, 2);
  EXPECT_FALSE(restored.created);
  EXPECT_EQ(restored.shard->step(), 4);
}

TableConfig small_table(const std::string& name, int64_t rows) {
  TableConfig config = big_table();
  config.name = name;
  config.num_rows = rows;
  config.dim = 4;  // 16 bytes a row
  return config;
}

TEST(TableRegistry, ConcurrentCreatorsOfDifferentTablesCannotOvershootTheTotalBytes) {
  constexpr int kCreators = 8;
  constexpr int64_t kRows = 1 << 15;
  constexpr int64_t kTableBytes = kRows * 64 * 4;  // 8 MiB each: builds that overlap
  RegistryLimits limits;
  limits.max_total_table_bytes = 3 * kTableBytes + kTableBytes / 2;  // three tables fit
  TableRegistry registry(limits);
  std::vector<std::string> outcomes(kCreators);
  std::atomic<int> ready{0};
  std::vector<std::thread> creators;
  for (int i = 0; i < kCreators; ++i) {
    creators.emplace_back([&, i] {
      TableConfig config = small_table("t" + std::to_string(i), kRows);
      config.dim = 64;
      ready.fetch_add(1);
      while (ready.load() < kCreators) std::this_thread::yield();  // start together
      try {
        registry.create(config, 0, 1);
        outcomes[i] = "created";
      } catch (const ResourceLimitError& error) {
        outcomes[i] = error.what();
      }
    });
  }
  for (auto& thread : creators) thread.join();
  int created = 0;
  for (const std::string& outcome : outcomes) {
    if (outcome == "created") {
      ++created;
    } else {
      EXPECT_NE(outcome.find("max_total_table_bytes"), std::string::npos) << outcome;
    }
  }
  EXPECT_EQ(created, 3);
  EXPECT_EQ(registry.held().tables, 3);
  EXPECT_EQ(registry.held().bytes, 3 * kTableBytes);
}

TEST(TableRegistry, AFailedBuildReleasesItsPlaceAndBytes) {
  RegistryLimits limits;
  limits.max_tables = 1;
  TableRegistry registry(limits);
  // 2^50 rows: shard_bytes says 4 PiB, which the build cannot allocate.
  EXPECT_ANY_THROW(registry.create(small_table("huge", int64_t{1} << 50), 0, 1));
  EXPECT_EQ(registry.held().tables, 0);
  EXPECT_EQ(registry.held().bytes, 0);
  EXPECT_TRUE(registry.create(small_table("a", 10), 0, 1).created);
  EXPECT_THROW(registry.create(small_table("b", 10), 0, 1), ResourceLimitError);
}

TEST(TableRegistry, RestoredTablesAreNotRefusedButCount) {
  RegistryLimits limits;
  limits.max_tables = 2;
  TableRegistry registry(limits);
  std::vector<ShardSnapshot> snapshots;
  for (const char* name : {"a", "b", "c"}) {
    snapshots.push_back(TableShard(small_table(name, 10), 0, 1).snapshot());
  }
  // Two shards of "d" (servers sharing a directory) wait for CreateTable.
  for (int index = 0; index < 2; ++index) {
    snapshots.push_back(TableShard(small_table("d", 10), index, 2).snapshot());
  }
  registry.add_restored(std::move(snapshots));
  EXPECT_NE(registry.find("c"), nullptr);
  EXPECT_EQ(registry.held().tables, 4);  // above max_tables, restored all the same
  EXPECT_THROW(registry.create(small_table("e", 10), 0, 1), ResourceLimitError);
  // Taking a waiting snapshot adds nothing: it is not refused.
  EXPECT_FALSE(registry.create(small_table("d", 10), 1, 2).created);
  EXPECT_EQ(registry.held().tables, 4);
  EXPECT_EQ(registry.held().bytes, 3 * 160 + 80);  // "d": only this server's shard is left
}

}  // namespace
}  // namespace gradwire::ps
