// gradwire-bench rpc: the table, the ratios, the rows and the JSON from fixed numbers.
#include "cases/rpc_report.h"

#include <gtest/gtest.h>

#include <sstream>

namespace gradwire::bench {
namespace {

std::vector<RpcCallSamples> fixed_calls() {
  return {{"empty", "gradwire", 0, 0, {40, 50, 60}},
          {"empty", "echo", 0, 0, {20, 25, 30}},
          {"lookup", "gradwire", 400, 12800, {90, 100, 110, 400}},
          {"lookup", "echo", 400, 12800, {40, 50, 60}},
          {"push", "gradwire", 13200, 0, {120}},
          {"push", "echo", 13200, 0, {30, 40, 50}}};
}

TEST(RpcBenchReportTest, RatioIsP50OfGradwireOverP50OfTheEcho) {
  const auto calls = fixed_calls();
  EXPECT_DOUBLE_EQ(*rpc_p50_ratio(calls, "empty"), 2.0);
  EXPECT_DOUBLE_EQ(*rpc_p50_ratio(calls, "lookup"), 105.0 / 50.0);
  EXPECT_DOUBLE_EQ(*rpc_p50_ratio(calls, "push"), 3.0);
  EXPECT_FALSE(rpc_p50_ratio({calls[0]}, "empty"));      // no echo
  EXPECT_FALSE(rpc_p50_ratio(calls, "empty", kRpcShm));  // not measured
  auto with_shm = calls;
  with_shm.push_back({"lookup", kRpcShm, 400, 12800, {10, 20, 30}});
  EXPECT_DOUBLE_EQ(*rpc_p50_ratio(with_shm, "lookup", kRpcShm), 20.0 / 50.0);
}

TEST(RpcBenchReportTest, PrintsOneLinePerCallAndSideAndTheRatios) {
  std::ostringstream out;
  print_rpc_report(out, RpcSettings{}, fixed_calls());
  const std::string expected =
      "# gradwire-bench rpc: one parameter server and one client in this process, on loopback "
      "TCP (gRPC: gradwire) and on the shared-memory call channel (shm), against a bare gRPC "
      "echo of the same bytes\n"
      "# preset default: 50 ids x dim 64, 4 tables, 200 warm-up + 2000 timed calls of each kind "
      "on each side\n"
      "call         system         request    response    calls    mean(us)     p50(us)     "
      "p99(us)\n"
      "empty        gradwire           0 B         0 B        3        50.0        50.0        "
      "59.8\n"
      "empty        echo               0 B         0 B        3        25.0        25.0        "
      "29.9\n"
      "lookup       gradwire         400 B    12.5 KiB        4       175.0       105.0       "
      "391.3\n"
      "lookup       echo             400 B    12.5 KiB        3        50.0        50.0        "
      "59.8\n"
      "push         gradwire      12.9 KiB         0 B        1       120.0       120.0       "
      "120.0\n"
      "push         echo          12.9 KiB         0 B        3        40.0        40.0        "
      "49.8\n"
      "# gradwire / echo, p50: empty 2.00x, lookup 2.10x, push 3.00x\n";
  EXPECT_EQ(out.str(), expected);
}

TEST(RpcBenchReportTest, BatchedKindsAreComparedWithOneCallPerPartOnEachSide) {
  std::vector<RpcCallSamples> calls = fixed_calls();
  calls.push_back({"tables", kRpcGradwire, 1600, 51200, {40, 50, 60}});
  calls.push_back({"tables-each", kRpcGradwire, 1600, 51200, {100}});
  calls.push_back({"step", kRpcShm, 13200, 0, {30}});
  calls.push_back({"step-each", kRpcShm, 13200, 0, {60}});
  EXPECT_DOUBLE_EQ(*rpc_batched_ratio(calls, kRpcBatchedKinds[0], kRpcGradwire), 0.5);
  EXPECT_DOUBLE_EQ(*rpc_batched_ratio(calls, kRpcBatchedKinds[1], kRpcShm), 0.5);
  EXPECT_FALSE(rpc_batched_ratio(calls, kRpcBatchedKinds[1], kRpcGradwire));
  std::ostringstream out;
  print_rpc_report(out, RpcSettings{}, calls);
  EXPECT_NE(
      out.str().find("\ntables-each  gradwire       1.6 KiB      50 KiB        1       100.0"),
      std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("# gradwire batched / one call per part, p50: tables 0.50x\n"
                           "# shm batched / one call per part, p50: step 0.50x\n"),
            std::string::npos)
      << out.str();
  RunMetadata metadata;
  const nlohmann::json document = rpc_document(metadata, RpcSettings{}, calls);
  EXPECT_DOUBLE_EQ(document.at("p50_batched_ratio").at("gradwire").at("tables").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(document.at("p50_batched_ratio").at("shm").at("step").get<double>(), 0.5);
  EXPECT_FALSE(rpc_document(metadata, RpcSettings{}, fixed_calls()).contains("p50_batched_ratio"));
  RpcSettings settings;
  settings.tables = 3;
  EXPECT_EQ(rpc_request_bytes("tables-each", settings), 3u * 400);
  EXPECT_EQ(rpc_response_bytes("tables", settings), 3u * 12800);
  EXPECT_EQ(rpc_request_bytes("step", settings), 400u + 12800);
  EXPECT_EQ(rpc_response_bytes("step-each", settings), 0u);
}

TEST(RpcBenchReportTest, DocumentCarriesCallsRatiosAndRows) {
  RunMetadata metadata;
  metadata.backend = "grpc";
  const nlohmann::json document = rpc_document(metadata, RpcSettings{}, fixed_calls());
  EXPECT_EQ(document.at("benchmark"), "rpc");
  EXPECT_EQ(document.at("schema_version"), kSchemaVersion);
  EXPECT_EQ(document.at("settings").at("ids"), 50);
  EXPECT_EQ(document.at("settings").at("transport"), "grpc");
  ASSERT_EQ(document.at("calls").size(), 6u);
  EXPECT_EQ(document.at("calls")[2].at("response_bytes"), 12800);
  EXPECT_DOUBLE_EQ(document.at("calls")[2].at("summary_us").at("p50").get<double>(), 105.0);
  EXPECT_DOUBLE_EQ(document.at("p50_ratio").at("push").get<double>(), 3.0);
  const RowSet rows = parse_row_set(document, "rpc document");
  EXPECT_EQ(rows.unit, "us");
  EXPECT_EQ(rows.chart_by, "call");
  ASSERT_EQ(rows.rows.size(), 6u);
  EXPECT_EQ(rows.rows[3].labels.at("system"), "echo");
  EXPECT_EQ(rows.rows[3].samples, (std::vector<double>{40, 50, 60}));
}

}  // namespace
}  // namespace gradwire::bench
