// Runs the real gradwire-bench binary (GRADWIRE_BENCH_PATH) on local ranks. Every run is wrapped
// in coreutils `timeout`, so a stuck rank fails the test instead of hanging it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "bench_process.h"
#include "gradwire/launch/launcher.h"
#include "harness/report.h"

namespace gradwire::bench {
namespace {

using namespace testing;  // bench_process.h

void expect_rows_for_sizes(const nlohmann::json& op_result, int ranks) {
  const auto& rows = op_result.at("rows");
  ASSERT_EQ(rows.size(), 10u) << op_result.at("op");  // 8, 16, ..., 4096
  std::uint64_t expected_bytes = 8;
  for (const auto& row : rows) {
    const auto bytes = row.at("bytes").get<std::uint64_t>();
    // allgather and reduce_scatter round each rank's share to whole floats.
    const bool per_rank_share =
        op_result.at("op") == "allgather" || op_result.at("op") == "reduce_scatter";
    if (per_rank_share && expected_bytes < 4u * ranks) {
      EXPECT_EQ(bytes, 4u * ranks);
    } else {
      EXPECT_EQ(bytes, expected_bytes);
    }
    EXPECT_EQ(row.at("wrong"), 0) << op_result.at("op") << " " << bytes;
    EXPECT_EQ(row.at("iters"), 3);
    EXPECT_GT(row.at("time_us").at("mean").get<double>(), 0.0);
    EXPECT_GT(row.at("time_us").at("p50").get<double>(), 0.0);
    EXPECT_GT(row.at("algbw_gbps").get<double>(), 0.0);
    EXPECT_GT(row.at("busbw_gbps").get<double>(), 0.0);
    expected_bytes *= 2;
  }
}

// --json in a directory that does not exist yet: the benchmark creates it.
TEST(CollectivesRunTest, TwoLocalRanksProduceCorrectRowsAndJson) {
  const std::string directory = temp_path("two_ranks");
  const std::string json = directory + "/results/two_ranks.json";
  const BenchRun run = run_bench(
      "collectives --ranks 2 --max-bytes 4096 --iters 3 --warmup 1 "
      "--json '" +
      json + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("allreduce (sum)"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("memcpy reference"), std::string::npos) << run.output;

  const nlohmann::json document = read_json_file(json);
  // The generic rows: diff compares them, report draws one chart per op.
  EXPECT_EQ(document.at("rows").at("entries").size(), 40u);
  const auto self = testing::diff_and_report(json);
  EXPECT_EQ(count(self.diff, "+0.0%"), 80u) << self.diff;
  EXPECT_NE(self.diff.find("op allreduce, backend gloo, buffers ordinary, bytes 4096"),
            std::string::npos)
      << self.diff;
  EXPECT_NE(self.report.find("wrote 4 charts from 1 file"), std::string::npos) << self.report;
  std::filesystem::remove_all(directory);
  EXPECT_EQ(document.at("schema_version"), kSchemaVersion);
  EXPECT_EQ(document.at("benchmark"), "collectives");
  EXPECT_EQ(document.at("metadata").at("ranks"), 2);
  EXPECT_EQ(document.at("metadata").at("backend"), "gloo");
  EXPECT_GT(document.at("metadata").at("memcpy_gbps").get<double>(), 0.0);
  EXPECT_EQ(document.at("wrong"), 0);
  const auto& results = document.at("results");
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].at("op"), "allreduce");
  EXPECT_EQ(results[1].at("op"), "broadcast");
  EXPECT_EQ(results[2].at("op"), "allgather");
  EXPECT_EQ(results[3].at("op"), "reduce_scatter");
  EXPECT_DOUBLE_EQ(results[0].at("bus_factor").get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(results[2].at("bus_factor").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(results[3].at("bus_factor").get<double>(), 0.5);
  for (const auto& op_result : results) expect_rows_for_sizes(op_result, 2);
}

// --backend gloo,shm: both measured in one run, each op's rows labelled with its backend.
TEST(CollectivesRunTest, TwoBackendsSideBySideInOneRun) {
  const std::string json = temp_path("two_backends.json");
  const BenchRun run = run_bench(
      "collectives --ranks 2 --backend gloo,shm --ops allreduce,broadcast,reduce_scatter "
      "--max-bytes 4096 "
      "--iters 3 --warmup 1 --json '" +
      json + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(count(run.output, "2 ranks, backend gloo,"), 3u) << run.output;
  EXPECT_EQ(count(run.output, "2 ranks, backend shm,"), 3u) << run.output;

  const nlohmann::json document = read_json_file(json);
  std::remove(json.c_str());
  EXPECT_EQ(document.at("metadata").at("backend"), "gloo,shm");
  EXPECT_EQ(document.at("settings").at("backends"), (std::vector<std::string>{"gloo", "shm"}));
  EXPECT_EQ(document.at("wrong"), 0);
  const auto& results = document.at("results");
  ASSERT_EQ(results.size(), 6u);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"allreduce", "gloo"}, {"allreduce", "shm"},       {"broadcast", "gloo"},
      {"broadcast", "shm"},  {"reduce_scatter", "gloo"}, {"reduce_scatter", "shm"}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(results[i].at("op"), expected[i].first);
    EXPECT_EQ(results[i].at("backend"), expected[i].second);
    expect_rows_for_sizes(results[i], 2);
  }
}

TEST(CollectivesRunTest, UnknownBackendFailsFast) {
  EXPECT_NE(run_bench("collectives --ranks 2 --backend gloo,tcp --max-bytes 8").exit_code, 0);
}

TEST(CollectivesRunTest, JoinsAnExistingJobInsteadOfLaunching) {
  const std::string json = temp_path("joined.json");
  const std::string env =
      "RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 "
      "MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
      std::to_string(launch::pick_free_port());
  // env -u in run_bench comes first, so these assignments win.
  const BenchRun run = run_bench(
      "collectives --ranks 2 --max-bytes 64 --iters 3 --warmup 0 "
      "--ops allreduce --json '" +
          json + "'",
      env);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json document = read_json_file(json);
  std::remove(json.c_str());
  EXPECT_EQ(document.at("metadata").at("ranks"), 1);
  ASSERT_EQ(document.at("results").size(), 1u);
  EXPECT_EQ(document.at("results")[0].at("rows").size(), 4u);  // 8, 16, 32, 64
}

TEST(CollectivesRunTest, BadArgumentsFailFast) {
  EXPECT_NE(run_bench("collectives --ops alltoall").exit_code, 0);
  EXPECT_NE(run_bench("collectives --min-bytes 1M --max-bytes 1K").exit_code, 0);
  // The worker flag outside a job is a usage error, not a hang.
  const BenchRun worker = run_bench("collectives --bench-worker");
  EXPECT_NE(worker.exit_code, 0);
  EXPECT_NE(worker.output.find("RANK"), std::string::npos) << worker.output;
}

}  // namespace
}  // namespace gradwire::bench
