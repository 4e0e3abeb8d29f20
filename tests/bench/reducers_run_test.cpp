// Runs the real `gradwire-bench reducers` (GRADWIRE_BENCH_PATH) with the small MLP on 2 local
// ranks, under coreutils `timeout`.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace gradwire::bench {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string output;
};

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "bench_reducers_" + name + "_" + std::to_string(getpid());
}

RunResult run_bench(const std::string& arguments) {
  const std::string log = temp_path("log.txt");
  const std::string command =
      "timeout -k 5 90 env -u RANK -u WORLD_SIZE -u OMPI_COMM_WORLD_RANK -u SLURM_PROCID "
      "GRADWIRE_TIMEOUT=60s '" GRADWIRE_BENCH_PATH "' " +
      arguments + " > '" + log + "' 2>&1";
  const int status = std::system(command.c_str());
  RunResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(log);
  std::ostringstream text;
  text << in.rdbuf();
  result.output = text.str();
  std::remove(log.c_str());
  return result;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ReducersRunTest, MlpOnTwoRanks) {
  const std::string json = temp_path("run.json");
  const RunResult run = run_bench(
      "reducers --model mlp --batch-size 4 --bucket-sizes 0.01,1 --iterations 3 --warmup 1 "
      "--ranks 2 --json '" +
      json + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("gradwire distributed benchmark suite: reducers"), std::string::npos)
      << run.output;
  EXPECT_EQ(count(run.output, "=== Summary for bucket size: "), 2u) << run.output;
  EXPECT_EQ(count(run.output, "DDP: [backward]"), 2u) << run.output;
  EXPECT_EQ(count(run.output, "\noverlapped  "), 4u) << run.output;
  EXPECT_EQ(count(run.output, "\nsync  "), 4u) << run.output;
  EXPECT_NE(run.output.find("=== Backward mean (ms) by bucket size"), std::string::npos);

  std::ifstream in(json);
  const nlohmann::json document = nlohmann::json::parse(in);
  std::remove(json.c_str());
  EXPECT_EQ(document.at("schema_version"), 1);
  EXPECT_EQ(document.at("benchmark"), "reducers");
  EXPECT_EQ(document.at("settings").at("world_size"), 2);
  EXPECT_EQ(document.at("settings").at("reducers"),
            (nlohmann::json{"overlapped", "async", "sync"}));
  const auto& results = document.at("results");
  ASSERT_EQ(results.size(), 2u);
  // 0.01 MiB buckets split the MLP's 220 kB of gradients in two; 1 MiB holds them in one.
  EXPECT_GT(results[0].at("reducers")[0].at("buckets").get<int>(), 1);
  EXPECT_EQ(results[1].at("reducers")[0].at("buckets"), 1);
  for (const auto& size : results) {
    for (const auto& reducer : size.at("reducers")) {
      EXPECT_EQ(reducer.at("forward_ms").at("count"), 6);  // 3 iterations x 2 ranks
      EXPECT_GT(reducer.at("backward_ms").at("min").get<double>(), 0.0);
    }
  }
}

TEST(ReducersRunTest, BadArgumentsFailFast) {
  EXPECT_NE(run_bench("reducers --bucket-sizes 5..3").exit_code, 0);
  EXPECT_NE(run_bench("reducers --reducers eager").exit_code, 0);
  EXPECT_NE(run_bench("reducers --model resnet9000").exit_code, 0);
}

}  // namespace
}  // namespace gradwire::bench
