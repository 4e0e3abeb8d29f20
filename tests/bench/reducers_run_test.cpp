// Runs the real `gradwire-bench reducers` (GRADWIRE_BENCH_PATH) with the small MLP on 2 local
// ranks, under coreutils `timeout`.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "bench_process.h"

namespace gradwire::bench {
namespace {

using namespace testing;  // bench_process.h

TEST(ReducersRunTest, MlpOnTwoRanks) {
  const std::string json = temp_path("run.json");
  const std::string html = temp_path("run.html");
  const BenchRun run = run_bench(
      "reducers --model mlp --batch-size 4 --bucket-sizes 0.01,1 --iterations 3 --warmup 1 "
      "--ranks 2 --json '" +
      json + "' --html '" + html + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  {
    // The page: its two charts (forward, backward) are drawn by gradwire-bench report's code,
    // which report_run_test checks in a browser.
    const std::string page = read_text_file(html);
    std::remove(html.c_str());
    EXPECT_NE(page.find("<title>gradwire-bench reducers</title>"), std::string::npos);
    EXPECT_NE(page.find("data-charts-expected=\"2\""), std::string::npos);
  }
  EXPECT_NE(run.output.find("gradwire distributed benchmark suite: reducers"), std::string::npos)
      << run.output;
  EXPECT_EQ(count(run.output, "=== Summary for bucket size: "), 2u) << run.output;
  EXPECT_EQ(count(run.output, "DDP: [backward]"), 2u) << run.output;
  EXPECT_EQ(count(run.output, "\noverlapped  "), 4u) << run.output;
  EXPECT_EQ(count(run.output, "\nsync  "), 4u) << run.output;
  EXPECT_NE(run.output.find("=== Backward mean (ms) by bucket size"), std::string::npos);

  // diff compares its generic rows: 2 phases x 2 sizes x 3 reducers, p50 and p95 each.
  const auto self = testing::diff_and_report(json);
  EXPECT_EQ(count(self.diff, "+0.0%"), 24u) << self.diff;
  EXPECT_NE(self.report.find("wrote 2 charts from 1 file"), std::string::npos) << self.report;
  std::ifstream in(json);
  const nlohmann::json document = nlohmann::json::parse(in);
  std::remove(json.c_str());
  EXPECT_EQ(document.at("schema_version"), kSchemaVersion);
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
