// Every subcommand that writes files checks them before it measures: a --json or --html path
// that cannot be written fails at once, naming the path, and writes nothing else.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench_process.h"

namespace gradwire::bench {
namespace {

using testing::BenchRun;
using testing::run_bench;
using testing::temp_path;

struct OutputCase {
  std::string subcommand;  // skipped when this gradwire-bench lacks it
  std::string arguments;   // before the output flag
  std::string flag;        // --json or --html
};

// A path below a regular file: no directory can be created there, not even by root.
TEST(OutputPathsRunTest, AnUnwritablePathFailsBeforeMeasuring) {
  const std::string file = temp_path("not_a_directory");
  { std::ofstream(file) << "x"; }
  const std::string bad = file + "/results/out";
  const std::string help = run_bench("--help").output;
  const std::vector<OutputCase> cases = {
      {"collectives", "collectives --ranks 2 --max-bytes 64", "--json"},
      {"ddp", "ddp --model mlp --world-sizes 1", "--json"},
      {"ddp", "ddp --model mlp --world-sizes 1", "--html"},
      {"reducers", "reducers --model mlp", "--html"},
      {"hybrid", "hybrid --preset quick", "--json"},
      {"hybrid", "hybrid --preset quick", "--html"},
      {"data", "data --rank-counts 1 --epochs 1", "--json"},
      {"report", "report '" + file + "'", "--html"},
  };
  for (const auto& c : cases) {
    if (help.find(c.subcommand) == std::string::npos) continue;
    const std::string path = bad + (c.flag == "--json" ? ".json" : ".html");
    const BenchRun run = run_bench(c.arguments + " " + c.flag + " '" + path + "'");
    EXPECT_EQ(run.exit_code, 1) << c.arguments << "\n" << run.output;
    EXPECT_NE(run.output.find("gradwire-bench " + c.subcommand + ": cannot write " + path),
              std::string::npos)
        << c.arguments << "\n"
        << run.output;
    EXPECT_EQ(run.output.find("starting"), std::string::npos) << run.output;
  }
  std::remove(file.c_str());
}

}  // namespace
}  // namespace gradwire::bench
