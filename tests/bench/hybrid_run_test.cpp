// gradwire-bench hybrid: short real runs of the binary on 2 trainers and 2 servers (processes on
// loopback, started by the binary), gradwire alone and with --reference pytorch (skipped unless
// /usr/bin/python3 imports torch.distributed.rpc), checking the rows and the JSON.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "bench_process.h"
#include "harness/report.h"

namespace gradwire::bench {
namespace {

using namespace testing;  // bench_process.h

// As run_bench, with room for the PyTorch reference (under ctest's 120 s).
BenchRun run_hybrid(const std::string& arguments) {
  return run_bench("hybrid " + arguments, "", 110);
}

void check_side(const nlohmann::json& side, const std::string& implementation) {
  EXPECT_EQ(side.at("implementation"), implementation);
  ASSERT_EQ(side.at("trainers").size(), 2u);
  for (int t = 0; t < 2; ++t) {
    const auto& trainer = side.at("trainers")[t];
    EXPECT_EQ(trainer.at("trainer"), t);
    ASSERT_EQ(trainer.at("epoch_seconds").size(), 2u);
    ASSERT_EQ(trainer.at("examples_per_epoch").size(), 2u);
    for (const auto& seconds : trainer.at("epoch_seconds")) EXPECT_GT(seconds.get<double>(), 0);
    for (const auto& examples : trainer.at("examples_per_epoch")) {
      // 10 batches of 20-50 ids in bags of 1-10: 2..50 examples per batch.
      EXPECT_GE(examples.get<int>(), 20);
      EXPECT_LE(examples.get<int>(), 500);
    }
    for (const char* phase : {"lookup", "dense_forward", "backward", "step"}) {
      EXPECT_EQ(trainer.at("phase_seconds").at(phase).size(), 2u) << phase;
    }
    if (implementation == "gradwire") {
      for (const char* phase : {"allreduce", "push"}) {
        EXPECT_EQ(trainer.at("phase_seconds").at(phase).size(), 2u) << phase;
      }
    }
  }
}

TEST(HybridRun, TwoTrainersTwoServers) {
  if (!kCaseBuilt) GTEST_SKIP() << "gradwire-bench was built without hybrid (no gradwire_ps)";
  const std::string json = temp_path("hybrid.json");
  const std::string traces = temp_path("hybrid_traces");
  const auto run = run_hybrid("--trainers 2 --servers 2 --epochs 2 --warmup 1 --trace '" + traces +
                              "' --json '" + json + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // --trace: the job's merged trace holds both trainers and the servers' process(es).
  const std::string trace_path = traces + "/hybrid-gradwire-2x2.json";
  {
    const nlohmann::json trace = read_json_document(trace_path);
    std::filesystem::remove_all(traces);
    std::set<std::string> processes;
    for (const auto& event : trace.at("traceEvents")) {
      if (event.value("name", "") == "process_name") {
        processes.insert(event.at("args").at("name").get<std::string>());
      }
    }
    EXPECT_EQ(processes.count("rank 0") + processes.count("rank 1"), 2u);
    EXPECT_TRUE(processes.count("ps servers 0-1") + processes.count("ps server 0") > 0);
  }
  EXPECT_NE(run.output.find("where the time went: hybrid-gradwire-2x2"), std::string::npos)
      << run.output;
  EXPECT_EQ(count(run.output, "Trainer0:  p50:"), 1u) << run.output;
  EXPECT_EQ(count(run.output, "Trainer1:  p50:"), 1u) << run.output;
  EXPECT_EQ(count(run.output, "\n     All:  p50:"), 1u) << run.output;
  EXPECT_NE(run.output.find("where an epoch goes"), std::string::npos) << run.output;
  // The servers run on this host: the calls go over shared memory (docs/ps.md), and the header
  // says what the run used, as trainer 0 found it.
  EXPECT_EQ(count(run.output,
                  "* Dense part over shm; parameter-server calls: shared memory to 2 of 2 "
                  "servers (trainer 0's, after the first run)\n"),
            1u)
      << run.output;
  EXPECT_EQ(run.output.find("gRPC (servers)"), std::string::npos) << run.output;
  const nlohmann::json document = read_json_file(json);
  // report draws hybrid's three charts and the trace's two (ranks, servers); diff compares its
  // rows (2 trainers, p50 and p95).
  const auto self = diff_and_report(json);
  EXPECT_NE(self.report.find("wrote 5 charts from 1 file"), std::string::npos) << self.report;
  EXPECT_EQ(count(self.diff, "+0.0%"), 4u) << self.diff;
  std::remove(json.c_str());
  EXPECT_EQ(document.at("schema_version"), kSchemaVersion);
  EXPECT_EQ(document.at("benchmark"), "hybrid");
  EXPECT_EQ(document.at("settings").at("servers"), 2);
  EXPECT_EQ(document.at("metadata").at("ranks"), 2);
  // What ran, as trainer 0 reported it: the dense part's communicator, the calls' transport.
  EXPECT_EQ(document.at("metadata").at("backend"), "shm");
  EXPECT_EQ(document.at("transport"), "shared memory");
  EXPECT_EQ(document.at("transports"),
            nlohmann::json::parse(R"([["shared memory", "shared memory"]])"));
  check_side(document, "gradwire");
  EXPECT_FALSE(document.contains("reference"));
  ASSERT_EQ(document.at("traces").size(), 1u);
  const nlohmann::json& summary = document.at("traces")[0].at("summary");
  ASSERT_EQ(summary.at("ranks").size(), 2u) << summary.dump();
  for (const auto& rank : summary.at("ranks")) {
    EXPECT_EQ(rank.at("steps"), 30);                   // (1 warm-up + 2 epochs) x 10 batches
    EXPECT_GT(rank.at("exposed_s").get<double>(), 0);  // lookups, ddp wait
  }
  ASSERT_GE(summary.at("servers").size(), 1u);
  EXPECT_GT(summary.at("servers")[0].at("calls").get<int>(), 0);
}

TEST(HybridRun, WithThePyTorchReference) {
  if (!kCaseBuilt) GTEST_SKIP() << "gradwire-bench was built without hybrid (no gradwire_ps)";
  if (std::system("/usr/bin/python3 -c 'import torch.distributed.rpc' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch.distributed.rpc";
  }
  const std::string json = temp_path("hybrid_reference.json");
  const auto run = run_hybrid(
      "--trainers 2 --servers 2 --epochs 2 --warmup 1 --reference pytorch "
      "--python /usr/bin/python3 --json '" +
      json + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // gradwire's and PyTorch's tables, then both in the comparison.
  EXPECT_EQ(count(run.output, "\n     All:  p50:"), 2u) << run.output;
  EXPECT_EQ(count(run.output, "gradwire      All:  p50:"), 1u) << run.output;
  EXPECT_EQ(count(run.output, "pytorch       All:  p50:"), 1u) << run.output;
  EXPECT_EQ(count(run.output, "gradwire/pytorch ex/s: p50:"), 1u) << run.output;
  // Compute parity: both sides' plain step, the model in one process (cases/parity.h).
  EXPECT_EQ(count(run.output,
                  "\nplain step (no ps, no ddp: an epoch of 10 batches in one "
                  "process): gradwire p50 "),
            1u)
      << run.output;
  const nlohmann::json document = read_json_file(json);
  std::remove(json.c_str());
  check_side(document, "gradwire");
  check_side(document.at("reference"), "pytorch");
  EXPECT_GT(document.at("comparison").at("pytorch").at("pooled").get<double>(), 0);
  const nlohmann::json& plain = document.at("plain_step");
  EXPECT_EQ(plain.at("gradwire").at("seconds").size(), 20u);
  EXPECT_EQ(plain.at("pytorch").at("seconds").size(), 20u);
  EXPECT_GT(plain.at("p50_ratio").get<double>(), 0);
  EXPECT_EQ(document.at("reference").at("plain_step").at("seconds").size(), 20u);
}

// GRADWIRE_TIMELINE_ALTERNATE_MS: every process of the job (trainers and servers) records only in
// half of the windows; the epochs fall into recorded and unrecorded ones, compared in the summary.
TEST(HybridRun, TheAlternatingTimelineSplitsTheEpochs) {
  if (!kCaseBuilt) GTEST_SKIP() << "gradwire-bench was built without hybrid (no gradwire_ps)";
  const std::string json = temp_path("hybrid_alternating.json");
  const std::string trace = temp_path("hybrid_alternating_trace.json");
  // Windows several epochs long (an epoch takes about 10 ms, 25 ms on a loaded machine; one across
  // a boundary counts for neither side), and about 24 of them, so that both sides get epochs.
  const auto run =
      run_bench("hybrid --trainers 2 --servers 2 --epochs 120 --warmup 1 --json '" + json + "'",
                "GRADWIRE_TIMELINE='" + trace + "' GRADWIRE_TIMELINE_ALTERNATE_MS=50");
  std::filesystem::remove_all(trace + ".d");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("the timeline alternating (GRADWIRE_TIMELINE_ALTERNATE_MS)"),
            std::string::npos)
      << run.output;
  const nlohmann::json document = read_json_document(json);
  std::remove(json.c_str());
  for (const auto& trainer : document.at("trainers")) {
    ASSERT_EQ(trainer.at("timeline_recorded").size(), trainer.at("epoch_seconds").size());
  }
  const nlohmann::json& alternating = document.at("summary").at("timeline_alternating");
  EXPECT_GT(alternating.at("recorded_epochs").get<int>(), 0);
  EXPECT_GT(alternating.at("unrecorded_epochs").get<int>(), 0);
  EXPECT_GT(alternating.at("p50_ratio").get<double>(), 0);
}

TEST(HybridRun, MissingPythonIsAClearError) {
  if (!kCaseBuilt) GTEST_SKIP() << "gradwire-bench was built without hybrid (no gradwire_ps)";
  const auto run = run_hybrid(
      "--trainers 1 --servers 1 --epochs 1 --reference pytorch "
      "--python /nonexistent/python3");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("install python3-torch (scripts/bench does)"), std::string::npos)
      << run.output;
}

}  // namespace
}  // namespace gradwire::bench
