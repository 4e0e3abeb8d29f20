// Lookups of a dense table still waiting for its values (issue 37, finding 3): they wait as a
// Step waits for trainers, so they are counted among --max-waiting-steps (one more is refused,
// not another thread held for up to 300 s), and they are given up when the server stops: a
// server full of them shuts down at once, not after its grace or their deadlines.
#include <gtest/gtest.h>

#include <future>
#include <thread>
#include <vector>

#include "gradwire/ps/server.h"
#include "ps/messages/service_messages.h"
#include "rpc/wire.h"
#include "server_test_support.h"

namespace gradwire::ps {
namespace server_waiting_lookups_test {  // not anonymous: unity batches

using namespace std::chrono_literals;
using testing::ServerClient;
using testing::table_config;

// A sync dense table on one server, waiting for trainer 0's values.
void create_waiting_table(ServerClient& client) {
  TableConfig dense = table_config("dense", 4, 4, UpdateMode::kSync);
  dense.kind = TableKind::kDense;
  v1::CreateTableResponse created;
  ASSERT_TRUE(client.create(dense, 0, 1, &created).ok());
  ASSERT_TRUE(created.awaiting_values());
}

grpc::Status lookup(ServerClient& client, std::chrono::milliseconds timeout) {
  v1::LookupRequest request;
  request.set_table("dense");
  rpc::encode_tensor(at::arange(4, at::kLong), request.mutable_ids(), "ids");
  return client.lookup(request, nullptr, timeout);
}

TEST(ServerWaitingLookups, AreCountedAmongTheWaitingCallsAndAnsweredOnceTheValuesCome) {
  ServerOptions options = testing::test_server_options();
  options.max_waiting_steps = 2;
  auto server = start_server(options);
  ServerClient client(server->address());
  create_waiting_table(client);
  std::vector<std::future<grpc::Status>> waiting;
  for (int i = 0; i < 2; ++i) {
    waiting.push_back(std::async(std::launch::async, [&] { return lookup(client, 30s); }));
  }
  std::this_thread::sleep_for(500ms);  // both wait for the values now
  const grpc::Status third = lookup(client, 5s);
  EXPECT_EQ(third.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << third.error_message();
  EXPECT_NE(third.error_message().find("--max-waiting-steps"), std::string::npos)
      << third.error_message();

  ASSERT_TRUE(client.assign("dense", at::arange(4, at::kLong), at::ones({4, 4})).ok());
  for (auto& call : waiting) {
    const grpc::Status status = call.get();
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_TRUE(lookup(client, 5s).ok());  // their places were given back
  server->shutdown();
}

TEST(ServerWaitingLookups, AServerFullOfThemStopsAtOnce) {
  auto server = start_server(testing::test_server_options());
  ServerClient client(server->address());
  create_waiting_table(client);
  std::vector<std::future<grpc::Status>> waiting;
  for (int i = 0; i < 20; ++i) {
    waiting.push_back(std::async(std::launch::async, [&] { return lookup(client, 60s); }));
  }
  std::this_thread::sleep_for(500ms);
  const auto start = std::chrono::steady_clock::now();
  // A grace far above the bound below, so that the bound tells "ended when the stop began" from
  // "waited the grace out" with room for a loaded machine (it was 1 s against a 2 s grace).
  server->shutdown(20s);
  const auto took = std::chrono::steady_clock::now() - start;
  // Waiting calls end when the stop begins, not when the grace is spent.
  EXPECT_LT(took, 5s) << "shutdown took "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << " ms with 20 lookups waiting (grace 20 s)";
  for (auto& call : waiting) EXPECT_FALSE(call.get().ok());
}

}  // namespace server_waiting_lookups_test
}  // namespace gradwire::ps
