// What every subcommand shares: --help shows the defaults of each preset from the case's option
// table, and a --json or --html path that cannot be written fails at once, naming the path,
// before anything is measured.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "bench_process.h"

namespace gradwire::bench {
namespace {

using namespace testing;  // bench_process.h

struct OutputCase {
  std::string subcommand;  // skipped when this gradwire-bench lacks it
  std::string arguments;   // before the output flag
  std::string flag;        // --json or --html
};

TEST(SubcommandsRunTest, HelpShowsEveryPresetsDefault) {
  const std::string help = run_bench("--help").output;
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"collectives", "largest size, e.g. 4096, 256M [256M; quick 16M]"},
      {"ddp", "timed iterations [10; quick 40]"},
      {"reducers", "bucket caps in MiB, e.g. 3..27 or 1,5,25 [3..27; quick 1,5,25]"},
      {"hybrid", "trainer processes [8; quick 2]"},
      {"data", "timed epochs per measurement [5; quick 2]"},
      {"rpc", "timed calls of each kind on each side [2000; quick 100]"},
  };
  for (const auto& [subcommand, line] : expected) {
    if (help.find(subcommand) == std::string::npos) continue;
    const BenchRun run = run_bench(subcommand + " --help");
    EXPECT_EQ(run.exit_code, 0) << run.output;
    EXPECT_NE(run.output.find(line), std::string::npos) << subcommand << "\n" << run.output;
  }
}

// A path below a regular file: no directory can be created there, not even by root.
TEST(SubcommandsRunTest, AnUnwritablePathFailsBeforeMeasuring) {
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
      {"rpc", "rpc --preset quick", "--json"},
      {"rpc", "rpc --preset quick", "--html"},
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
