// What the bench tests share: running a command (the real gradwire-bench binary,
// GRADWIRE_BENCH_PATH, outside any job: RANK, WORLD_SIZE, OMPI_COMM_WORLD_RANK, SLURM_PROCID and
// GRADWIRE_PS_ADDRS removed, collectives limited to 60 s) under coreutils `timeout` (SIGKILL 5 s
// after it), so a stuck rank fails the test instead of hanging it; the fixtures
// (GRADWIRE_BENCH_FIXTURES); temporary paths; counting; the message of a refused setting.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "gradwire/common/error.h"
#include "harness/report.h"  // read_text_file, read_json_document

namespace gradwire::bench::testing {

struct BenchRun {
  int exit_code = -1;
  std::string output;  // stdout, and stderr unless kept apart
  std::string errors;  // stderr when kept apart
};

// The message of the InvalidArgument that `call` throws; empty when it throws none.
template <class F>
std::string invalid_argument_message(F&& call) {
  try {
    call();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

// A path in the test's temporary directory, unique to this process.
inline std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "bench_" + name + "_" + std::to_string(getpid());
}

// Runs the shell `command` under `timeout -k 5 seconds`.
inline BenchRun run_shell(const std::string& command, int seconds, bool keep_errors_apart = false) {
  const std::string out = temp_path("stdout.txt");
  const std::string err = temp_path("stderr.txt");
  const std::string line = "timeout -k 5 " + std::to_string(seconds) + " " + command + " > '" +
                           out + "' " + (keep_errors_apart ? "2> '" + err + "'" : "2>&1");
  const int status = std::system(line.c_str());
  BenchRun result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.output = read_text_file(out);
  result.errors = keep_errors_apart ? read_text_file(err) : "";
  std::remove(out.c_str());
  std::remove(err.c_str());
  return result;
}

// How many times `what` occurs in `text`.
inline std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

#ifdef GRADWIRE_BENCH_FIXTURES
inline std::string fixture(const std::string& name) {
  return std::string(GRADWIRE_BENCH_FIXTURES) + "/" + name;
}
inline nlohmann::json fixture_json(const std::string& name) {
  return read_json_document(fixture(name));
}
#endif

// Whether gradwire-bench has the case a test binary tests (GRADWIRE_BENCH_WITH_CASE, set by
// tests/bench/CMakeLists.txt when the case's libraries are built); its real runs skip otherwise.
#ifdef GRADWIRE_BENCH_WITH_CASE
constexpr bool kCaseBuilt = true;
#else
constexpr bool kCaseBuilt = false;
#endif

#ifdef GRADWIRE_BENCH_PATH
// Runs `env_prefix GRADWIRE_BENCH_PATH arguments` (90 s unless `seconds` says otherwise).
inline BenchRun run_bench(const std::string& arguments, const std::string& env_prefix = "",
                          int seconds = 90, bool keep_errors_apart = false) {
  return run_shell(
      "env -u RANK -u WORLD_SIZE -u OMPI_COMM_WORLD_RANK -u SLURM_PROCID -u GRADWIRE_PS_ADDRS "
      "GRADWIRE_TIMEOUT=60s " +
          env_prefix + " '" GRADWIRE_BENCH_PATH "' " + arguments,
      seconds, keep_errors_apart);
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
#endif

}  // namespace gradwire::bench::testing
