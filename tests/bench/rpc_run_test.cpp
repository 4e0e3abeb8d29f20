// gradwire-bench rpc: a short real run (an in-process server and the echo on loopback): the table,
// the ratio line and the JSON, and that diff and report read it. No timing is asserted.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench_process.h"
#include "cases/rpc_report.h"
#include "harness/report.h"

namespace gradwire::bench {
namespace {

using namespace testing;  // bench_process.h

TEST(RpcBenchRunTest, QuickRunPrintsEveryCallAndWritesItsJson) {
  if (!kCaseBuilt) GTEST_SKIP() << "gradwire-bench was built without rpc (no gradwire_ps)";
  const std::string json = temp_path("rpc.json");
  const auto run = run_bench("rpc --preset quick --iters 20 --warmup 5 --json '" + json + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(count(run.output, "\nempty        gradwire "), 1u) << run.output;
  EXPECT_EQ(count(run.output, "\nlookup       echo             400 B    12.5 KiB       20 "), 1u)
      << run.output;
  EXPECT_EQ(count(run.output, "\npush         gradwire      12.9 KiB         0 B       20 "), 1u)
      << run.output;
  EXPECT_EQ(count(run.output, "\nlookup       shm              400 B    12.5 KiB       20 "), 1u)
      << run.output;
  EXPECT_EQ(count(run.output, "\ntables-each  shm            1.6 KiB      50 KiB       20 "), 1u)
      << run.output;
  EXPECT_EQ(count(run.output, "\nstep         gradwire      12.9 KiB         0 B       20 "), 1u)
      << run.output;
  EXPECT_EQ(count(run.output, "# gradwire / echo, p50: empty "), 1u) << run.output;
  EXPECT_EQ(count(run.output, "# shm / echo, p50: empty "), 1u) << run.output;
  EXPECT_EQ(count(run.output, "# gradwire batched / one call per part, p50: tables "), 1u)
      << run.output;
  EXPECT_EQ(count(run.output, "# shm batched / one call per part, p50: tables "), 1u) << run.output;

  const nlohmann::json document = read_json_file(json);
  EXPECT_EQ(document.at("benchmark"), "rpc");
  ASSERT_EQ(document.at("calls").size(), 21u);  // 7 kinds x (gRPC, shared memory, echo)
  for (const auto& call : document.at("calls")) {
    EXPECT_EQ(call.at("summary_us").at("count"), 20) << call;
    EXPECT_GT(call.at("summary_us").at("p50").get<double>(), 0) << call;
  }
  for (const char* call : kRpcCallKinds) {
    EXPECT_GT(document.at("p50_ratio").at(call).get<double>(), 0) << call;
    EXPECT_GT(document.at("p50_ratio_shm").at(call).get<double>(), 0) << call;
  }
  for (const char* system : {"gradwire", "shm"}) {
    for (const char* call : {"tables", "step"}) {
      EXPECT_GT(document.at("p50_batched_ratio").at(system).at(call).get<double>(), 0) << call;
    }
  }
  EXPECT_EQ(document.at("rows").at("entries").size(), 21u);
  const auto self = diff_and_report(json);
  EXPECT_EQ(count(self.diff, "+0.0%"), 42u) << self.diff;  // 21 rows, p50 and p95
  std::remove(json.c_str());
}

}  // namespace
}  // namespace gradwire::bench
