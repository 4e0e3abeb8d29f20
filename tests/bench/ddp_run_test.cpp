// Runs the real gradwire-bench ddp (GRADWIRE_BENCH_PATH) with the small models on 1 and 2 local
// ranks, and diff on what it wrote. Every run is wrapped in coreutils `timeout`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "bench_process.h"
#include "cases/ddp_reference.h"
#include "cases/ddp_report.h"
#include "cases/ddp_results.h"
#include "harness/command.h"
#include "harness/python.h"
#include "harness/report.h"

namespace gradwire::bench {
namespace {

using namespace testing;  // bench_process.h

// Whether python3 or /usr/bin/python3 imports torch (the tests of the optional reference skip
// without one).
bool python_with_torch_found() {
  return run_command({"python3", "-c", "import torch"}).succeeded() ||
         run_command({"/usr/bin/python3", "-c", "import torch"}).succeeded();
}

// Where gradwire-bench ddp --reference pytorch writes the reference's JSON: "r.json" ->
// "r.pytorch.json".
std::string reference_json_next_to(const std::string& json) {
  return json.substr(0, json.rfind('.')) + ".pytorch.json";
}

// --trace: the timeline of mlp's 2-rank round, merged, with both ranks' processes and that round
// only; its summary in the JSON.
TEST(DdpRunTest, SmallModelsOnOneAndTwoRanks) {
  const std::string json = temp_path("run.json");
  const std::string traces = temp_path("traces");
  const BenchRun run = run_bench(
      "ddp --model mlp --model cnn --batch-size 4 --iterations 3 --warmup 1 --world-sizes 1,2 "
      "--trace '" +
      traces + "' --json '" + json + "' --html '" + json + ".html'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string trace_path = traces + "/ddp-mlp-gloo-2ranks.json";
  {
    const nlohmann::json trace = read_json_document(trace_path);
    std::filesystem::remove_all(traces);
    std::set<std::string> processes;
    int forwards = 0;
    for (const auto& event : trace.at("traceEvents")) {
      if (event.value("name", "") == "process_name") {
        processes.insert(event.at("args").at("name").get<std::string>());
      }
      if (event.value("name", "") == "forward") ++forwards;
    }
    EXPECT_EQ(processes, (std::set<std::string>{"rank 0", "rank 1"}));
    EXPECT_EQ(forwards, 2 * 4);  // the traced round only: 1 warm-up + 3 iterations per rank
  }
  EXPECT_NE(run.output.find("where the time went: ddp-mlp-gloo-2ranks"), std::string::npos)
      << run.output;
  {
    const std::string page = read_text_file(json + ".html");
    std::remove((json + ".html").c_str());
    EXPECT_NE(page.find("<title>gradwire-bench ddp</title>"), std::string::npos);
    // mlp and cnn, and the trace's bars per rank.
    EXPECT_NE(page.find("data-charts-expected=\"3\""), std::string::npos);
    EXPECT_NE(page.find("<a href=\"" + trace_path + "\">"), std::string::npos);
  }
  EXPECT_NE(run.output.find("* Distributed backend: gloo"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("Benchmark: mlp with batch size 4"), std::string::npos);
  EXPECT_NE(run.output.find("Benchmark: cnn with batch size 4"), std::string::npos);
  // Per model: no ddp, 1 rank and 2 ranks, each with four percentiles.
  EXPECT_EQ(count(run.output, "   1 ranks --   no ddp:  p50:"), 2u) << run.output;
  EXPECT_EQ(count(run.output, "   1 ranks --    1M/1R:  p50:"), 2u) << run.output;
  EXPECT_EQ(count(run.output, "   2 ranks --    1M/2R:  p50:"), 2u) << run.output;
  EXPECT_EQ(count(run.output, "  p95: "), 6u) << run.output;
  EXPECT_NE(run.output.find("gradwire-bench ddp: preset default: models mlp,cnn"),
            std::string::npos)
      << run.output;

  const nlohmann::json document = read_json_file(json);
  EXPECT_EQ(document.at("schema_version"), kSchemaVersion);
  EXPECT_EQ(document.at("benchmark"), "ddp");
  EXPECT_EQ(document.at("distributed_backend"), "gloo");
  EXPECT_EQ(document.at("bucket_size"), 25);
  EXPECT_EQ(document.at("world_size"), 2);
  EXPECT_TRUE(document.contains("pytorch_version"));
  EXPECT_TRUE(document.at("hardware").contains("cpu_model"));
  ASSERT_EQ(document.at("traces").size(), 1u);
  const nlohmann::json& entry = document.at("traces")[0];
  EXPECT_EQ(entry.at("path"), trace_path);
  EXPECT_EQ(entry.at("repeat"), 1);
  ASSERT_EQ(entry.at("summary").at("ranks").size(), 2u) << entry.dump();
  for (const auto& rank : entry.at("summary").at("ranks")) {
    EXPECT_EQ(rank.at("steps"), 4);
    EXPECT_GT(rank.at("compute_s").get<double>(), 0);
    EXPECT_GT(rank.at("exposed_s").get<double>(), 0);  // ddp wait
  }
  const DdpReport report = parse_ddp_document(document, json);
  ASSERT_EQ(report.results.size(), 2u);
  for (const auto& result : report.results) {
    ASSERT_EQ(result.rounds.size(), 3u) << result.model;
    EXPECT_FALSE(result.rounds[0].ddp);
    EXPECT_EQ(result.rounds[0].measurements.size(), 3u);  // rank 0 only
    EXPECT_EQ(result.rounds[1].measurements.size(), 3u);
    EXPECT_EQ(result.rounds[2].measurements.size(), 6u);  // both ranks' iterations
    for (const auto& round : result.rounds) {
      for (const double seconds : round.measurements) EXPECT_GT(seconds, 0.0);
    }
    EXPECT_EQ(result.rounds[2].ddp_stats.at("iterations"), 3);
  }

  // diff of a file against itself: every configuration, no change.
  const BenchRun diff = run_bench("diff '" + json + "' '" + json + "'");
  std::remove(json.c_str());
  ASSERT_EQ(diff.exit_code, 0) << diff.output;
  EXPECT_EQ(count(diff.output, "    no ddp:  p75:"), 2u) << diff.output;
  EXPECT_EQ(count(diff.output, "   2 ranks:  p75:"), 2u) << diff.output;
  EXPECT_EQ(count(diff.output, "+0.0%"), 12u) << diff.output;
}

// --backend gloo,shm: one baseline, then every world size on each backend, labelled; the JSON
// says which backend each round used. --side-by-side adds plain training on both ranks at once
// after the baseline, with the slowest rank's measurements.
TEST(DdpRunTest, TwoBackendsAgainstOneBaseline) {
  const std::string json = temp_path("backends.json");
  const BenchRun run = run_bench(
      "ddp --model mlp --batch-size 4 --iterations 3 --warmup 1 --world-sizes 2 "
      "--backend gloo,shm --side-by-side --json '" +
      json + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("* Distributed backend: gloo,shm"), std::string::npos) << run.output;
  EXPECT_EQ(count(run.output, "   1 ranks --   no ddp:  p50:"), 1u) << run.output;
  EXPECT_EQ(count(run.output, "   2 ranks -- 1M/2R no ddp:  p50:"), 1u) << run.output;
  EXPECT_EQ(count(run.output, "   2 ranks -- 1M/2R gloo:  p50:"), 1u) << run.output;
  EXPECT_EQ(count(run.output, "   2 ranks -- 1M/2R shm:  p50:"), 1u) << run.output;

  const nlohmann::json document = read_json_file(json);
  std::remove(json.c_str());
  EXPECT_EQ(document.at("distributed_backend"), "gloo,shm");
  const DdpReport report = parse_ddp_document(document, json);
  ASSERT_EQ(report.results.size(), 1u);
  const auto& rounds = report.results[0].rounds;
  ASSERT_EQ(rounds.size(), 4u);
  EXPECT_FALSE(rounds[0].ddp);
  EXPECT_FALSE(rounds[1].ddp);
  EXPECT_EQ(rounds[1].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(rounds[1].measurements.size(), 3u);  // the slowest rank's
  EXPECT_EQ(find_matching_round(report.results[0], rounds[1]), &rounds[1]);
  EXPECT_EQ(rounds[2].backend, "gloo");
  EXPECT_EQ(rounds[3].backend, "shm");
  EXPECT_EQ(rounds[3].measurements.size(), 6u);
  EXPECT_EQ(find_matching_round(report.results[0], rounds[3]), &rounds[3]);
}

// --interleave: the baseline and DDP on 1 rank come from one alternating run; the other world
// sizes as usual.
TEST(DdpRunTest, InterleavedBaselineAndOneRank) {
  const std::string json = temp_path("interleaved.json");
  const BenchRun run = run_bench(
      "ddp --model mlp --batch-size 4 --iterations 3 --warmup 1 --world-sizes 1,2 --interleave "
      "--json '" +
      json + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("mlp, no ddp and DDP on 1 rank, alternating"), std::string::npos)
      << run.output;
  EXPECT_EQ(run.output.find("mlp, DDP on 1 rank:"), std::string::npos) << run.output;
  EXPECT_EQ(count(run.output, "   1 ranks --    1M/1R:  p50:"), 1u) << run.output;
  EXPECT_EQ(count(run.output, "   2 ranks --    1M/2R:  p50:"), 1u) << run.output;
  const nlohmann::json document = read_json_file(json);
  std::remove(json.c_str());
  EXPECT_EQ(document.at("interleave"), true);
  const DdpReport report = parse_ddp_document(document, json);
  ASSERT_EQ(report.results.size(), 1u);
  const auto& rounds = report.results[0].rounds;
  ASSERT_EQ(rounds.size(), 3u);
  EXPECT_FALSE(rounds[0].ddp);
  EXPECT_EQ(rounds[0].measurements.size(), 3u);
  EXPECT_TRUE(rounds[1].ddp);
  EXPECT_EQ(rounds[1].measurements.size(), 3u);
  EXPECT_EQ(rounds[1].ddp_stats.at("iterations"), 3);
  EXPECT_EQ(rounds[2].measurements.size(), 6u);
}

// GRADWIRE_TIMELINE_ALTERNATE_MS: both ranks record only in half of the windows; the DDP round's
// iterations (every rank's) fall into recorded and unrecorded ones, compared in the round.
TEST(DdpRunTest, TheAlternatingTimelineSplitsTheIterations) {
  const std::string json = temp_path("alternating.json");
  const std::string trace = temp_path("alternating_trace.json");
  const BenchRun run = run_bench(
      "ddp --model mlp --batch-size 4 --iterations 2000 --warmup 1 --world-sizes 2 --json '" +
          json + "'",
      "GRADWIRE_TIMELINE='" + trace + "' GRADWIRE_TIMELINE_ALTERNATE_MS=10");
  std::filesystem::remove_all(trace + ".d");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("mlp, 1M/2R: the timeline alternating"), std::string::npos)
      << run.output;
  const nlohmann::json document = read_json_file(json);
  std::remove(json.c_str());
  const nlohmann::json& ddp = document.at("benchmark_results")[0].at("result")[1];
  EXPECT_EQ(ddp.at("timeline_recorded").size(), ddp.at("measurements").size());
  EXPECT_GT(ddp.at("timeline_alternating").at("recorded_iterations").get<int>(), 0);
  EXPECT_GT(ddp.at("timeline_alternating").at("unrecorded_iterations").get<int>(), 0);
}

TEST(DdpRunTest, MissingPythonSkipsTheReference) {
  const BenchRun run = run_bench(
      "ddp --model mlp --batch-size 4 --iterations 2 --warmup 0 --world-sizes 1 "
      "--reference pytorch --python /nonexistent/python3");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("--reference pytorch skipped: no Python interpreter with torch"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("* Reference: skipped"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("gradwire/pytorch"), std::string::npos) << run.output;
}

TEST(DdpRunTest, PytorchReferenceWhenAvailable) {
  if (!python_with_torch_found()) GTEST_SKIP() << "no Python with torch: the reference is optional";
  const std::string json = temp_path("reference.json");
  const std::string reference_json = reference_json_next_to(json);
  const BenchRun run = run_bench(
      "ddp --model mlp --batch-size 4 --iterations 3 --warmup 1 --world-sizes 1,2 "
      "--reference pytorch --repeat 2 --interleave --json '" +
      json + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("--- reference: PyTorch"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("alternating with gradwire, 2 times"), std::string::npos);
  EXPECT_NE(run.output.find("(all 2 repeats pooled)"), std::string::npos) << run.output;
  EXPECT_EQ(count(run.output, "gradwire/pytorch sec/iter: p50:"), 3u) << run.output;
  EXPECT_EQ(count(run.output, "p50 ratio by repeat: "), 3u) << run.output;
  // Both files hold both repeats' measurements: 2 x 3 iterations per rank.
  for (const auto& path : {json, reference_json}) {
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << path;
    const DdpReport report = parse_ddp_document(nlohmann::json::parse(in), path);
    std::remove(path.c_str());
    ASSERT_EQ(report.results.size(), 1u) << path;
    ASSERT_EQ(report.results[0].rounds.size(), 3u) << path;
    EXPECT_EQ(report.results[0].rounds[0].measurements.size(), 6u) << path;
    EXPECT_EQ(report.results[0].rounds[1].measurements.size(), 6u) << path;  // interleaved
    EXPECT_EQ(report.results[0].rounds[2].measurements.size(), 12u) << path;
  }
}

// Without torchvision (Debian's python3-torch has none) the reference builds torchvision's models
// itself (bench/reference/reference_common.py); its --self-test checks their parameter counts.
TEST(DdpRunTest, ReferenceModelsHaveTorchvisionsParameterCounts) {
  std::string why_not;
  const std::optional<ReferenceRunner> reference =
      find_reference(ddp_reference_needs(DdpSettings{}), why_not);
  if (!reference) GTEST_SKIP() << "the reference is optional: " << why_not;
  const CommandOutput check =
      run_command({reference->python.python, reference->script, "--self-test"});
  EXPECT_TRUE(check.succeeded()) << check.output;
  EXPECT_EQ(count(check.output, " ok\n"), 7u) << check.output;
  EXPECT_EQ(count(check.output, "MISMATCH"), 0u) << check.output;
  EXPECT_NE(check.output.find("vgg11              132863336 parameters"), std::string::npos)
      << check.output;
  EXPECT_NE(check.output.find("vgg16              138357544 parameters"), std::string::npos)
      << check.output;
}

// The VGGs through the whole path: gradwire-bench starts the reference, which trains vgg11
// (small images: the classifier pools to 7x7 whatever the size).
TEST(DdpRunTest, PytorchReferenceTrainsVgg) {
  if (!python_with_torch_found()) GTEST_SKIP() << "no Python with torch: the reference is optional";
  const std::string json = temp_path("vgg.json");
  const std::string reference_json = reference_json_next_to(json);
  const BenchRun run = run_bench(
      "ddp --model vgg11 --batch-size 1 --image-size 32 --iterations 1 --warmup 0 "
      "--world-sizes 1 --reference pytorch --json '" +
          json + "'",
      "", 300);
  std::remove(json.c_str());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("--- reference: PyTorch"), std::string::npos) << run.output;
  const DdpReport report = parse_ddp_document(read_json_file(reference_json), reference_json);
  std::remove(reference_json.c_str());
  ASSERT_EQ(report.results.size(), 1u);
  EXPECT_EQ(report.results[0].model, "vgg11");
  ASSERT_EQ(report.results[0].rounds.size(), 2u);  // no ddp, DDP on 1 rank
  EXPECT_EQ(report.results[0].rounds[1].measurements.size(), 1u);
}

TEST(DdpRunTest, BadArgumentsFailFast) {
  EXPECT_NE(run_bench("ddp --model resnet9000").exit_code, 0);
  EXPECT_NE(run_bench("ddp --reference tensorflow").exit_code, 0);
  EXPECT_NE(run_bench("diff /nonexistent.json /nonexistent.json").exit_code, 0);
}

}  // namespace
}  // namespace gradwire::bench
