// gradwire-bench ps: short real runs of the binary (2 trainers and a server or two on loopback,
// started by the binary; one thread per process) with both comparisons, in the summation role and
// against the PyTorch reference (when /usr/bin/python3 has torch), checking the Pass lines, the
// tables, the comparisons and the JSON, and that diff and report read it; a bad --mode fails at
// once.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>

#include "bench_process.h"
#include "harness/report.h"

namespace gradwire::bench {
namespace {

using namespace testing;  // bench_process.h

BenchRun run_ps(const std::string& arguments) { return run_bench("ps " + arguments, "", 110); }

// Every trainer of `side` measured `iterations` iterations of `examples` images, with `phases`.
void check_side(const nlohmann::json& side, std::size_t trainers, std::size_t iterations,
                const std::vector<std::string>& phases) {
  ASSERT_EQ(side.at("trainers").size(), trainers);
  for (std::size_t t = 0; t < trainers; ++t) {
    const auto& trainer = side.at("trainers")[t];
    EXPECT_EQ(trainer.at("trainer"), t);
    ASSERT_EQ(trainer.at("iteration_seconds").size(), iterations);
    for (const auto& seconds : trainer.at("iteration_seconds")) EXPECT_GT(seconds.get<double>(), 0);
    for (const auto& examples : trainer.at("examples_per_iteration")) EXPECT_EQ(examples, 2);
    for (const auto& phase : phases) {
      EXPECT_EQ(trainer.at("phase_seconds").at(phase).size(), iterations) << phase;
    }
  }
}

TEST(PsRun, QuickWithBothComparisons) {
  if (!kCaseBuilt) GTEST_SKIP() << "gradwire-bench was built without ps (no gradwire_ps)";
  const std::string json = temp_path("ps.json");
  const auto run =
      run_ps("--preset quick --servers 1 --threads 1 --compare local,ddp --json '" + json + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // Two passes of each side: parameter servers, DDP, the local process.
  const std::regex pass_line(
      "Pass = [01], Elapsed = [0-9]+\\.[0-9]{2}, Training performance = [0-9]+\\.[0-9]{6} "
      "imgs/s\n");
  EXPECT_EQ(std::distance(std::sregex_iterator(run.output.begin(), run.output.end(), pass_line),
                          std::sregex_iterator()),
            6)
      << run.output;
  EXPECT_EQ(count(run.output, "\nPass = 1, Elapsed = "), 3u) << run.output;
  EXPECT_EQ(count(run.output, "Trainer1:  p50:"), 2u) << run.output;  // PS and DDP
  EXPECT_EQ(count(run.output, "dense layout: 62 tensors, 11181642 parameters"), 1u) << run.output;
  EXPECT_EQ(count(run.output,
                  "pull messages per step, rows in shared memory, calls over shared memory\n"),
            1u)
      << run.output;
  EXPECT_EQ(count(run.output, "push_wait ms    server_apply ms       pull_wait ms"), 1u);
  // The header says how the calls went as trainer 0's client reported it, never a default.
  EXPECT_EQ(count(run.output, "* Parameter-server calls: shared memory to 1 of 1 servers "), 1u)
      << run.output;
  EXPECT_EQ(run.output.find("gRPC)"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("backend auto"), std::string::npos) << run.output;
  // pushed and pulled, 2 trainers + All (MiB/s or GiB/s, as fast as the machine is)
  EXPECT_EQ(count(run.output, "iB/s"), 6u) << run.output;
  EXPECT_EQ(count(run.output, "gradwire/gradwire-ddp ex/s: p50: "), 1u) << run.output;
  EXPECT_EQ(count(run.output, "gradwire/local ex/s: p50: "), 1u) << run.output;

  const nlohmann::json document = read_json_file(json);
  // report draws ps's four charts; diff compares its rows (5 trainers' rows, p50 and p95).
  const auto self = diff_and_report(json);
  EXPECT_NE(self.report.find("wrote 4 charts from 1 file"), std::string::npos) << self.report;
  EXPECT_EQ(count(self.diff, "+0.0%"), 10u) << self.diff;
  std::remove(json.c_str());
  EXPECT_EQ(document.at("benchmark"), "ps");
  EXPECT_EQ(document.at("settings").at("servers"), 1);
  EXPECT_EQ(document.at("settings").at("role"), "optimizer");
  EXPECT_EQ(document.at("passes").size(), 2u);
  EXPECT_EQ(document.at("details").at("servers").size(), 1u);
  EXPECT_EQ(document.at("metadata").at("backend"), "shared memory");
  EXPECT_EQ(document.at("transport"), "shared memory");
  EXPECT_EQ(document.at("transports"), nlohmann::json::parse(R"([["shared memory"]])"));
  // What "auto" became on this host.
  const std::string ddp_backend = document.at("compare").at("ddp").at("backend");
  EXPECT_TRUE(ddp_backend == "shm" || ddp_backend == "gloo") << ddp_backend;
  check_side(document, 2, 4, {"forward", "backward", "push_wait", "server_apply", "pull_wait"});
  // Every iteration pushes and pulls every parameter: 4 bytes each, and 8 per row id.
  for (const auto& bytes : document.at("trainers")[0].at("bytes").at("pushed")) {
    EXPECT_GE(bytes.get<double>(), 4.0 * 11181642);
  }
  check_side(document.at("compare").at("ddp"), 2, 4, {"forward", "backward"});
  check_side(document.at("compare").at("local"), 1, 4, {"forward", "backward"});
  EXPECT_GT(document.at("comparison").at("gradwire-ddp").at("pooled").get<double>(), 0);
  EXPECT_FALSE(document.contains("reference"));
}

TEST(PsRun, SummationRole) {
  if (!kCaseBuilt) GTEST_SKIP() << "gradwire-bench was built without ps (no gradwire_ps)";
  const std::string json = temp_path("ps_sum.json");
  const auto run = run_ps(
      "--preset quick --role sum --warmup 0 --passes 1 --iterations 1 --json '" + json + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(count(run.output, "\nPass = 0, Elapsed = "), 1u) << run.output;
  EXPECT_NE(run.output.find("role sum: the servers average the gradients"), std::string::npos);
  const nlohmann::json document = read_json_file(json);
  std::remove(json.c_str());
  EXPECT_EQ(document.at("settings").at("role"), "sum");
  check_side(document, 2, 1, {"push_wait", "server_apply", "pull_wait"});
}

// The PyTorch reference: ps_reference.py, with reference_common.py's resnet18 and launcher.
TEST(PsRun, WithThePyTorchReference) {
  if (!kCaseBuilt) GTEST_SKIP() << "gradwire-bench was built without ps (no gradwire_ps)";
  if (std::system("/usr/bin/python3 -c 'import torch.distributed.rpc' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch.distributed.rpc";
  }
  const std::string json = temp_path("ps_reference.json");
  const auto run = run_bench(
      "ps --preset quick --passes 1 --reference pytorch --python /usr/bin/python3 --json '" + json +
          "'",
      "", 240);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(count(run.output, "\nPass = 0, Elapsed = "), 2u) << run.output;  // gradwire, PyTorch
  EXPECT_EQ(count(run.output, "gradwire/pytorch ex/s: p50: "), 1u) << run.output;
  // Compute parity: both sides' plain step, the model in one process (cases/parity.h).
  EXPECT_EQ(
      count(run.output, "\nplain step (no ps: the model in one process, batch 2): gradwire p50 "),
      1u)
      << run.output;
  const nlohmann::json document = read_json_file(json);
  std::remove(json.c_str());
  EXPECT_EQ(document.at("reference").at("implementation"), "pytorch");
  const nlohmann::json& plain = document.at("plain_step");
  EXPECT_EQ(plain.at("gradwire").at("seconds").size(), 10u);
  EXPECT_EQ(plain.at("pytorch").at("seconds").size(), 10u);
  EXPECT_GT(plain.at("p50_ratio").get<double>(), 0);
  check_side(document.at("reference"), 2, 2, {"forward", "backward", "comm"});
  EXPECT_GT(document.at("comparison").at("pytorch").at("pooled").get<double>(), 0);
}

TEST(PsRun, RefusesABadModeAtOnce) {
  if (!kCaseBuilt) GTEST_SKIP() << "gradwire-bench was built without ps (no gradwire_ps)";
  const auto run = run_ps("--mode stale:soon");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("use sync, async or stale:K"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("starting"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace gradwire::bench
