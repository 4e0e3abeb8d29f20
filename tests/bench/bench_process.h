// Running the real gradwire-bench binary (GRADWIRE_BENCH_PATH) from a test: outside any job
// (RANK, WORLD_SIZE, OMPI_COMM_WORLD_RANK and SLURM_PROCID removed), with collectives limited to
// 60 s, under coreutils `timeout` (90 s, SIGKILL 5 s later) so a stuck rank fails the test
// instead of hanging it.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness/report.h"  // read_text_file

namespace gradwire::bench::testing {

struct BenchRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// A path in the test's temporary directory, unique to this process.
inline std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "bench_" + name + "_" + std::to_string(getpid());
}

// Runs `env_prefix GRADWIRE_BENCH_PATH arguments`.
inline BenchRun run_bench(const std::string& arguments, const std::string& env_prefix = "") {
  const std::string log = temp_path("log.txt");
  const std::string command =
      "timeout -k 5 90 env -u RANK -u WORLD_SIZE -u OMPI_COMM_WORLD_RANK -u SLURM_PROCID "
      "GRADWIRE_TIMEOUT=60s " +
      env_prefix + " '" GRADWIRE_BENCH_PATH "' " + arguments + " > '" + log + "' 2>&1";
  const int status = std::system(command.c_str());
  BenchRun result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.output = read_text_file(log);
  std::remove(log.c_str());
  return result;
}

// How many times `what` occurs in `text`.
inline std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A result file compared with itself (`diff FILE FILE`, every delta +0.0%) and drawn
// (`report FILE --html ...`); both must exit 0. Returns the two outputs.
struct SelfComparison {
  std::string diff;
  std::string report;
};
inline SelfComparison diff_and_report(const std::string& json) {
  const BenchRun diff = run_bench("diff '" + json + "' '" + json + "'");
  EXPECT_EQ(diff.exit_code, 0) << diff.output;
  const BenchRun report = run_bench("report '" + json + "' --html '" + json + ".html'");
  EXPECT_EQ(report.exit_code, 0) << report.output;
  std::remove((json + ".html").c_str());
  return {diff.output, report.output};
}

}  // namespace gradwire::bench::testing
