// The client's shared-memory transport (docs/ps.md "Shared memory") seen from the trainer: which
// servers share memory and why not, pushes of shared tensors applied without the servers writing
// them, lookups written in place into a shared `out`, and the bytes path for everything else.
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "client_test_support.h"
#include "gradwire/common/env.h"
#include "gradwire/common/host_identity.h"
#include "gradwire/ps/client.h"
#include "gradwire/ps/server.h"
#include "ps/messages/service_messages.h"
#include "rpc/call_channel.h"
#include "rpc/channel.h"
#include "rpc/proto/ps.grpc.pb.h"

namespace gradwire::ps {
namespace shared_memory_client_test {  // not anonymous: unity batches (docs/architecture.md)

using testing::client_options;
using testing::run_trainers;
using testing::Servers;
using testing::small_table;

// Rows 0..5 of dim 4: even ids on server 0, odd ones on server 1.
TableConfig sync_table(int trainers) {
  TableConfig config = small_table("t", 6, 4, UpdateMode::kSync, trainers);
  config.optimizer.lr = 1.0;
  return config;
}

TEST(PsSharedMemory, ServersOnTheTrainersHostShareMemoryUnlessEitherSideSaysOtherwise) {
  Servers servers(2);
  ClientOptions options = client_options(servers.addresses());
  const auto shared = connect(options);
  shared->create_table(sync_table(1));
  EXPECT_TRUE(shared->shares_memory_with(0));
  EXPECT_TRUE(shared->shares_memory_with(1));
  EXPECT_EQ(shared->transport(0), "shared memory");
  EXPECT_EQ(shared->transport(1), "shared memory");

  options.shared_memory = false;
  const auto off = connect(options);
  off->create_table(sync_table(1));
  EXPECT_FALSE(off->shares_memory_with(0));
  EXPECT_EQ(off->transport(0), "grpc");

  options.shared_memory = true;
  options.host_identity = "another-host";
  const auto elsewhere = connect(options);
  elsewhere->create_table(sync_table(1));
  EXPECT_FALSE(elsewhere->shares_memory_with(1));
  EXPECT_EQ(elsewhere->transport(1), "grpc");

  ServerOptions server_options;
  server_options.token = testing::kClientToken;
  server_options.shared_memory = false;  // gradwire-ps-server --no-shared-memory
  const std::unique_ptr<Server> bytes_only = start_server(server_options);
  const auto to_bytes_only = connect(client_options({bytes_only->address()}));
  to_bytes_only->create_table(sync_table(1));
  EXPECT_FALSE(to_bytes_only->shares_memory_with(0));
  EXPECT_EQ(to_bytes_only->transport(0), "grpc");
  // It still trains: the shared tensor's rows go as bytes.
  const at::Tensor grads = to_bytes_only->shared_tensor({2, 4});
  grads.fill_(1.0);
  const at::Tensor before = to_bytes_only->lookup("t", at::arange(2, at::kLong));
  to_bytes_only->push("t", at::arange(2, at::kLong), grads);
  to_bytes_only->step();
  EXPECT_TRUE(to_bytes_only->lookup("t", at::arange(2, at::kLong)).allclose(before - 1.0));
}

TEST(PsSharedMemory, PushedSharedGradientsAreAppliedAndLeftAsTheTrainersWroteThem) {
  Servers servers(2);
  std::vector<at::Tensor> pushed(2);
  at::Tensor initial;
  at::Tensor trained;
  run_trainers(2, [&](int t) {
    const auto client = connect(client_options(servers.addresses(), t, 2));
    client->create_table(sync_table(2));
    if (t == 0) initial = client->lookup("t", at::arange(6, at::kLong));
    // Rows 0, 2, 4: all on server 0, one message each step.
    pushed[t] = client->shared_tensor({3, 4});
    pushed[t].copy_(at::arange(12, at::kFloat).view({3, 4}) * (t + 1));
    client->push("t", at::tensor({0, 2, 4}, at::kLong), pushed[t]);
    client->step();
    if (t == 0) trained = client->lookup("t", at::arange(6, at::kLong));
  });
  // The mean of the trainers' gradients (x1 and x2: x1.5) was applied to rows 0, 2, 4 only.
  at::Tensor expected = initial.clone();
  expected.index_put_({at::tensor({0, 2, 4}, at::kLong)},
                      initial.index_select(0, at::tensor({0, 2, 4}, at::kLong)) -
                          at::arange(12, at::kFloat).view({3, 4}) * 1.5);
  EXPECT_TRUE(trained.allclose(expected)) << trained - expected;
  for (int t = 0; t < 2; ++t) {
    EXPECT_TRUE(at::equal(pushed[t], at::arange(12, at::kFloat).view({3, 4}) * (t + 1)))
        << "trainer " << t << "'s shared gradients were changed by a server";
  }
}

TEST(PsSharedMemory, ALookupIntoASharedTensorIsWrittenInPlaceAndAnyOtherOutIsFilled) {
  Servers servers(2);
  const auto client = connect(client_options(servers.addresses()));
  client->create_table(sync_table(1));
  const at::Tensor even = at::tensor({0, 2, 4}, at::kLong);
  const at::Tensor expected = client->lookup("t", even);

  const at::Tensor shared = client->shared_tensor({3, 4});
  const at::Tensor got = client->start_lookup("t", even, at::kFloat, shared)->wait();
  EXPECT_EQ(got.data_ptr(), shared.data_ptr());
  EXPECT_TRUE(at::equal(shared, expected));

  // Ids of both servers, or an ordinary tensor: the rows arrive as bytes and are copied into out.
  const at::Tensor all = at::arange(6, at::kLong);
  const at::Tensor shared_all = client->shared_tensor({6, 4});
  EXPECT_TRUE(at::equal(client->start_lookup("t", all, at::kFloat, shared_all)->wait(),
                        client->lookup("t", all)));
  const at::Tensor plain = at::zeros({3, 4});
  EXPECT_EQ(client->start_lookup("t", even, at::kFloat, plain)->wait().data_ptr(),
            plain.data_ptr());
  EXPECT_TRUE(at::equal(plain, expected));
  EXPECT_THROW(client->start_lookup("t", even, at::kFloat, at::zeros({2, 4})), InvalidArgument);
}

// Note [attempt limits] (ps/core/table_shard.h; issue 37, finding 6) on both transports: a
// trainer whose attempt is far above the table's newest, or whose incarnation is far after the
// server's clock, is refused with InvalidArgument, and the job's own trainer then trains as if
// nothing happened. Before, the first hostile call was taken and the job's calls were refused as
// stale until the servers restarted. ServerFuzz.HostileAttemptNumbersAreRefusedAndLockNoTable
// sends every call that carries an attempt over gRPC.
TEST(PsSharedMemory, HostileAttemptNumbersAreRefusedOnBothTransportsAndLockNoTable) {
  const at::Tensor ids = at::tensor({0, 2, 3}, at::kLong);
  for (const testing::Transport transport :
       {testing::Transport::kShared, testing::Transport::kBytes}) {
    SCOPED_TRACE(testing::to_string(transport));
    Servers servers(2);
    const auto trainer = [&](std::optional<int64_t> attempt, std::optional<uint64_t> incarnation) {
      ClientOptions options =
          testing::with_transport(client_options(servers.addresses()), transport);
      options.attempt = attempt;
      options.incarnation = incarnation;
      const auto client = connect(options);
      client->create_table(sync_table(1));
      EXPECT_EQ(client->transport(0), testing::transport_name(transport));
      EXPECT_EQ(client->transport(1), testing::transport_name(transport));
      return client;
    };
    for (const auto& [attempt, incarnation] :
         std::vector<std::pair<std::optional<int64_t>, std::optional<uint64_t>>>{
             {std::numeric_limits<int64_t>::max(), std::nullopt},
             {kMaxAttemptJump + 1, std::nullopt},
             {std::nullopt, std::numeric_limits<uint64_t>::max()}}) {
      const auto hostile = trainer(attempt, incarnation);
      EXPECT_THROW(
          {
            hostile->push("t", ids, at::ones({3, 4}));
            hostile->step();
          },
          InvalidArgument);
    }
    const auto job = trainer(std::nullopt, std::nullopt);
    const at::Tensor before = job->lookup("t", ids);
    job->push("t", ids, at::ones({3, 4}));
    job->step();
    EXPECT_TRUE(job->lookup("t", ids).allclose(before - 1.0));
  }
}

// Note [call channels] (service.cpp): CreateTable opens a trainer's channel only when it shares
// memory with the trainer and the region is a channel; anything else is ignored (the trainer calls
// over gRPC) and the table is created all the same.
TEST(PsCallChannel, AServerServesOnlyAChannelInTheRegionOfATrainerItSharesMemoryWith) {
  Servers servers(1);
  auto stub = v1::ParameterServer::NewStub(rpc::make_channel(servers.addresses().front()));
  rpc::SharedRegions regions;
  const at::Tensor not_a_channel = regions.allocate({8 << 20}, at::kByte);
  rpc::ChannelClient channel(regions, servers.addresses().front());
  const auto create = [&](const std::string& host, const v1::SharedBytes& ref) {
    v1::CreateTableRequest request;
    *request.mutable_config() = to_message(sync_table(1));
    request.set_num_servers(1);
    request.set_host(host);
    *request.mutable_probe() = regions.probe();
    *request.mutable_channel() = ref;
    grpc::ClientContext context;
    rpc::prepare_context(context, testing::kClientToken,
                         std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::CreateTableResponse response;
    const grpc::Status status = stub->CreateTable(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  };
  const std::string here = local_host_identity(EnvMap::from_process());
  v1::SharedBytes wrong_key = channel.reference();
  wrong_key.set_key(wrong_key.key() ^ 1);
  v1::SharedBytes stdin_of_init = channel.reference();
  stdin_of_init.set_pid(1);
  stdin_of_init.set_fd(0);
  for (const v1::SharedBytes& hostile : {*regions.find(not_a_channel), wrong_key, stdin_of_init}) {
    const v1::CreateTableResponse response = create(here, hostile);
    EXPECT_TRUE(response.shared_memory());
    EXPECT_FALSE(response.channel()) << hostile.ShortDebugString();
  }
  EXPECT_FALSE(create("another-host", channel.reference()).channel());
  EXPECT_FALSE(channel.usable());
  EXPECT_TRUE(create(here, channel.reference()).channel());
  channel.attached();
  EXPECT_TRUE(channel.usable());
}

}  // namespace shared_memory_client_test
}  // namespace gradwire::ps
