// The parameter server's metrics (ps/server/server_metrics.h, docs/observability.md): a server
// started with ServerOptions::metrics_listen counts its calls per method and transport (gRPC and
// a trainer's call channel), its Batch parts, steps and their waits per table, refusals by
// cause, checkpoints and resumes, and reads pending bytes against their caps at scrape time;
// servers started together share one endpoint, labelled by server; the text passes `promtool
// check metrics` (Debian's prometheus package; that test is skipped without it).
#include "ps/server/server_metrics.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../launch/test_support.h"
#include "../rpc/http_get.h"
#include "gradwire/common/error.h"
#include "gradwire/ps/client.h"
#include "gradwire/ps/server.h"
#include "ps/server/server_listen.h"
#include "server_metrics_support.h"

namespace gradwire::ps {
namespace server_metrics_test {  // not anonymous: unity batches (docs/architecture.md)

using gradwire::testing::http_body;
using gradwire::testing::http_get;
using launch::testing::TempDir;
using testing::sample_value;

constexpr char kToken[] = "metrics-test-token";

TableConfig sync_table(const std::string& name) {
  TableConfig config;
  config.name = name;
  config.num_rows = 8;
  config.dim = 4;
  config.mode = UpdateMode::kSync;
  config.num_trainers = 1;
  config.optimizer.lr = 0.5;
  return config;
}

ClientOptions client_options(const std::string& address, bool shared_memory) {
  ClientOptions options;
  options.servers = std::vector<std::string>{address};
  options.token = kToken;
  options.rank = 0;
  options.world_size = 1;
  options.shared_memory = shared_memory;
  options.call_deadline = std::chrono::seconds(10);
  return options;
}

TEST(ServerMetricsCounts, CausesAndCallsAsCounted) {
  EXPECT_STREQ(refusal_cause(grpc::StatusCode::UNAUTHENTICATED), "token");
  EXPECT_STREQ(refusal_cause(grpc::StatusCode::RESOURCE_EXHAUSTED), "limit");
  EXPECT_STREQ(refusal_cause(grpc::StatusCode::ABORTED), "stale_attempt");
  EXPECT_STREQ(refusal_cause(grpc::StatusCode::DEADLINE_EXCEEDED), "deadline");
  EXPECT_STREQ(refusal_cause(grpc::StatusCode::UNKNOWN), "internal");

  ServerMetrics metrics;
  metrics.call(CallMethod::kBatch, CallTransport::kChannel, 100, 2000,
               std::chrono::microseconds(300), grpc::StatusCode::OK);
  metrics.call(CallMethod::kCreateTable, CallTransport::kGrpc, 50, 0, std::chrono::milliseconds(2),
               grpc::StatusCode::UNAUTHENTICATED);
  metrics.step("emb", std::chrono::milliseconds(20), true);
  const std::string text = metrics::render_text(metrics.collect());
  EXPECT_EQ(
      sample_value(text, "gradwire_ps_requests_total{method=\"Batch\",transport=\"channel\"}"), 1);
  EXPECT_EQ(sample_value(text,
                         "gradwire_ps_request_duration_seconds_bucket{method=\"Batch\","
                         "transport=\"channel\",le=\"0.00025\"}"),
            0);
  EXPECT_EQ(sample_value(text,
                         "gradwire_ps_request_duration_seconds_bucket{method=\"Batch\","
                         "transport=\"channel\",le=\"0.0005\"}"),
            1);
  EXPECT_EQ(sample_value(text,
                         "gradwire_ps_response_bytes_sum{method=\"Batch\","
                         "transport=\"channel\"}"),
            2000);
  EXPECT_EQ(sample_value(text,
                         "gradwire_ps_refusals_total{method=\"CreateTable\","
                         "transport=\"grpc\",cause=\"token\"}"),
            1);
  EXPECT_EQ(sample_value(text, "gradwire_ps_step_calls_total{table=\"emb\",applied=\"true\"}"), 1);
  EXPECT_EQ(sample_value(text, "gradwire_ps_step_wait_seconds_count{table=\"emb\"}"), 1);
  // Only Batch comes over a channel: no series of other methods there.
  EXPECT_EQ(text.find("method=\"CreateTable\",transport=\"channel\""), std::string::npos);
}

TEST(ServerMetricsCounts, BeyondLoopbackTheEndpointIsNamedExposed) {
  EXPECT_EQ(metrics_exposure_warning("127.0.0.1:9400"), "");
  EXPECT_EQ(metrics_exposure_warning("[::1]:9400"), "");
  EXPECT_EQ(metrics_exposure_warning("localhost:9400"), "");
  const std::string warning = metrics_exposure_warning("0.0.0.0:9400");
  EXPECT_NE(warning.find("serving metrics on 0.0.0.0 without a token"), std::string::npos)
      << warning;
  EXPECT_NE(warning.find("--metrics PORT"), std::string::npos);
}

TEST(ServerMetrics, AServerCountsItsCallsOnBothTransports) {
  TempDir dir;
  ServerOptions options;
  options.token = kToken;
  options.metrics_listen = "127.0.0.1:0";
  options.checkpoint_dir = dir.file("checkpoints");
  options.max_pending_bytes = 1 << 20;
  std::unique_ptr<Server> server = start_server(options);
  const std::string metrics_address = server->metrics_address();
  ASSERT_FALSE(metrics_address.empty());
  EXPECT_NE(metrics_address, "127.0.0.1:0");

  const auto shared = connect(client_options(server->address(), true));
  shared->create_table(sync_table("emb"));
  ASSERT_EQ(shared->transport(0), "shared memory");
  const at::Tensor ids = at::arange(3, at::kLong);
  shared->lookup("emb", ids);
  shared->push("emb", ids, at::ones({3, 4}));
  shared->step();
  shared->checkpoint();
  shared->resume(1);  // the table is at step 1 already: kept
  const auto bytes = connect(client_options(server->address(), false));
  bytes->create_table(sync_table("emb"));
  ASSERT_EQ(bytes->transport(0), "grpc");
  bytes->lookup("emb", ids);
  ClientOptions wrong = client_options(server->address(), false);
  wrong.token = "not-the-token";
  EXPECT_THROW(connect(wrong)->create_table(sync_table("emb")), ConfigError);

  const std::string answer = http_get(metrics_address);
  ASSERT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer;
  const std::string text = http_body(answer);
  const std::string server_label = "server=\"" + server->address() + "\"";
  const auto series = [&](const std::string& name, const std::string& labels) {
    return sample_value(text,
                        name + "{" + server_label + (labels.empty() ? "" : ",") + labels + "}");
  };
  EXPECT_EQ(series("gradwire_ps_requests_total", "method=\"CreateTable\",transport=\"grpc\""), 3);
  EXPECT_EQ(series("gradwire_ps_refusals_total",
                   "method=\"CreateTable\",transport=\"grpc\",cause=\"token\""),
            1);
  // The shared client's lookup and step came over its channel, the other's lookups over gRPC.
  EXPECT_GE(series("gradwire_ps_requests_total", "method=\"Batch\",transport=\"channel\""), 2);
  EXPECT_GE(series("gradwire_ps_batch_parts_total", "transport=\"channel\",part=\"lookup\""), 1);
  EXPECT_EQ(series("gradwire_ps_batch_parts_total", "transport=\"channel\",part=\"step\""), 1);
  EXPECT_EQ(series("gradwire_ps_batch_parts_total", "transport=\"channel\",part=\"push\""), 1);
  EXPECT_EQ(series("gradwire_ps_batch_parts_total", "transport=\"grpc\",part=\"lookup\""), 1);
  EXPECT_GT(series("gradwire_ps_request_bytes_sum", "method=\"Batch\",transport=\"grpc\""), 0);
  EXPECT_GT(series("gradwire_ps_response_bytes_sum", "method=\"Batch\",transport=\"channel\""), 0);
  EXPECT_EQ(series("gradwire_ps_step_calls_total", "table=\"emb\",applied=\"true\""), 1);
  EXPECT_EQ(series("gradwire_ps_step_wait_seconds_count", "table=\"emb\""), 1);
  EXPECT_EQ(series("gradwire_ps_table_step", "table=\"emb\""), 1);
  EXPECT_EQ(series("gradwire_ps_pending_bytes", "table=\"emb\""), 0);
  EXPECT_EQ(series("gradwire_ps_pending_bytes_limit", "table=\"emb\""), 1 << 20);
  EXPECT_EQ(series("gradwire_ps_total_pending_bytes_limit", ""), double(int64_t{4} << 30));
  EXPECT_EQ(series("gradwire_ps_waiting_calls_limit", ""), 1024);
  EXPECT_EQ(series("gradwire_ps_channels", ""), 1);
  EXPECT_EQ(series("gradwire_ps_checkpoint_duration_seconds_count", "table=\"emb\""), 1);
  EXPECT_GE(series("gradwire_ps_checkpoint_age_seconds", "table=\"emb\""), 0);
  EXPECT_EQ(series("gradwire_ps_resumes_total", "table=\"emb\",outcome=\"kept\""), 1);
  EXPECT_EQ(series("gradwire_ps_restored_tables", ""), 0);
  EXPECT_GT(series("gradwire_ps_start_time_seconds", ""), 1.7e9);

  // A restart from the checkpoint shows in the restored tables and a newer start time.
  server->shutdown();
  EXPECT_LT(gradwire::testing::connect_to(metrics_address), 0) << "still serving after shutdown";
  server.reset();
  options.metrics_listen = metrics_address;  // the same port again
  server = start_server(options);
  EXPECT_EQ(server->metrics_address(), metrics_address);
  const std::string again = http_body(http_get(metrics_address));
  EXPECT_EQ(
      sample_value(again, "gradwire_ps_restored_tables{server=\"" + server->address() + "\"}"), 1);
}

TEST(ServerMetrics, TheTextPassesPromtool) {
  TempDir dir;
  if (testing::find_program("promtool").empty()) {
    GTEST_SKIP() << "promtool not found: install Debian's prometheus package (apt-get install "
                    "prometheus; scripts/setup does) to check the metrics text with it";
  }
  ServerOptions options;
  options.token = kToken;
  options.metrics_listen = "127.0.0.1:0";
  options.checkpoint_dir = dir.file("checkpoints");
  std::vector<std::unique_ptr<Server>> servers = start_servers({options, options});
  // Every family with series: calls on both transports, a refusal, a step, a checkpoint.
  const auto client = connect(client_options(servers[0]->address(), true));
  client->create_table(sync_table("emb"));
  client->lookup("emb", at::arange(2, at::kLong));
  client->push("emb", at::arange(2, at::kLong), at::ones({2, 4}));
  client->step();
  client->checkpoint();
  client->resume(1);
  ClientOptions wrong = client_options(servers[1]->address(), false);
  wrong.token = "not-the-token";
  EXPECT_THROW(connect(wrong)->create_table(sync_table("emb")), ConfigError);
  const std::string text = http_body(http_get(servers[0]->metrics_address()));
  EXPECT_NE(text.find("gradwire_ps_checkpoint_age_seconds{"), std::string::npos);
  EXPECT_EQ(testing::promtool_problems(text, dir), "") << text;
}

TEST(ServerMetrics, ServersStartedTogetherShareOneEndpoint) {
  ServerOptions options;
  options.token = kToken;
  options.metrics_listen = "127.0.0.1:0";
  std::vector<std::unique_ptr<Server>> servers = start_servers({options, options});
  ASSERT_EQ(servers[0]->metrics_address(), servers[1]->metrics_address());
  const std::string text = http_body(http_get(servers[0]->metrics_address()));
  for (const auto& server : servers) {
    EXPECT_EQ(sample_value(text, "gradwire_ps_requests_total{server=\"" + server->address() +
                                     "\",method=\"Batch\",transport=\"grpc\"}"),
              0);
  }
  EXPECT_EQ(text.find("# TYPE gradwire_ps_requests_total"),
            text.rfind("# TYPE gradwire_ps_requests_total"));  // one family, both servers
  // The endpoint stays while a server uses it.
  servers[0]->shutdown();
  EXPECT_NE(http_body(http_get(servers[1]->metrics_address())).find(servers[1]->address()),
            std::string::npos);
  servers[1]->shutdown();
  EXPECT_LT(gradwire::testing::connect_to(servers[1]->metrics_address()), 0);

  // An address in use is a ConfigError naming it.
  std::unique_ptr<Server> first = start_server(options);
  options.metrics_listen = first->metrics_address();
  EXPECT_THROW(start_server(options), ConfigError);
}

}  // namespace server_metrics_test
}  // namespace gradwire::ps
