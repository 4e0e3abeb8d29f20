// The client against in-process servers: lookups, pushes, steps, and the failures a trainer
// must see as errors naming the server or the missing trainer, never as a hang.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "../launch/test_support.h"
#include "client_test_support.h"
#include "gradwire/common/error.h"
#include "gradwire/launch/launcher.h"
#include "ps/core/initializer.h"

namespace gradwire::ps {
namespace {

using namespace std::chrono_literals;
using testing::make_client;
using testing::Servers;
using testing::small_table;

using launch::testing::contains;

TEST(PsClient, LookupOfDuplicateAndMixedIdsEqualsTheInitialRows) {
  Servers servers(3);
  auto client = make_client(servers.addresses());
  const TableConfig config = small_table("emb", 20, 5, UpdateMode::kAsync, 1);
  client->create_table(config);
  const at::Tensor ids = at::tensor({19, 0, 7, 7, 3, 19, 11}, at::kLong);
  const at::Tensor rows = client->lookup("emb", ids);
  EXPECT_TRUE(rows.equal(initial_rows(config.initializer, ids, 5)));
  EXPECT_EQ(client->step_count("emb"), 0);
}

TEST(PsClient, OutOfRangeIdsAndUnknownTablesAreInvalidArguments) {
  Servers servers(2);
  auto client = make_client(servers.addresses());
  client->create_table(small_table("emb", 10, 4, UpdateMode::kAsync, 1));
  EXPECT_THROW(client->lookup("emb", at::tensor({3, 10}, at::kLong)), InvalidArgument);
  EXPECT_THROW(client->lookup("other", at::tensor({3}, at::kLong)), InvalidArgument);
  EXPECT_THROW(client->push("emb", at::tensor({3}, at::kLong), at::ones({1, 5})), InvalidArgument);
}

TEST(PsClient, CreatingATableWithAnotherConfigIsRefused) {
  Servers servers(2);
  auto client = make_client(servers.addresses());
  client->create_table(small_table("emb", 10, 4, UpdateMode::kAsync, 1));
  client->create_table(small_table("emb", 10, 4, UpdateMode::kAsync, 1));  // the same: fine
  EXPECT_THROW(client->create_table(small_table("emb", 10, 8, UpdateMode::kAsync, 1)),
               InvalidArgument);
}

TEST(PsClient, AsyncPushIsAppliedAtFlushWithDuplicatesSummed) {
  Servers servers(2);
  auto client = make_client(servers.addresses());
  TableConfig config = small_table("emb", 6, 2, UpdateMode::kAsync, 1);
  config.optimizer.lr = 1.0;
  client->create_table(config);
  const at::Tensor ids = at::tensor({1, 4, 1}, at::kLong);
  const at::Tensor before = client->lookup("emb", at::arange(6, at::kLong));
  client->push("emb", ids, at::ones({3, 2}));
  client->step();
  const at::Tensor after = client->lookup("emb", at::arange(6, at::kLong));
  at::Tensor expected = before.clone();
  expected[1] -= 2;  // id 1 twice, summed
  expected[4] -= 1;
  EXPECT_TRUE(after.allclose(expected));
  EXPECT_EQ(client->step_count("emb"), 1);
}

TEST(PsClient, LargeLookupsAndPushesGoAsSeveralCallsWithinTheLimits) {
  // Servers read requests of at most 4 MiB (gRPC's default): a push of 60000 x 32 rows (8 MB) is
  // cut into calls below it, and a lookup whose answer (7.7 MB) exceeds the client's answer limit
  // of 1 MiB is cut too.
  Servers servers(2);
  ClientOptions options;
  options.servers = servers.addresses();
  options.token = testing::kClientToken;
  options.rank = 0;
  options.world_size = 1;
  options.max_message_bytes = 1 << 20;
  auto client = connect(options);
  TableConfig config = small_table("big", 60000, 32, UpdateMode::kSync, 1);
  config.optimizer.lr = 1.0;
  config.initializer.kind = InitializerKind::kZeros;
  client->create_table(config);
  const at::Tensor all = at::arange(60000, at::kLong);
  client->push("big", all, at::ones({60000, 32}));
  client->step();
  EXPECT_TRUE(at::equal(client->lookup("big", all), at::full({60000, 32}, -1.0f)));
}

TEST(PsClient, ServersThatDisagreeOnTheStepServeNothingUntilResume) {
  // Two servers checkpoint every step into one directory; server 1 is restarted from its
  // checkpoint of step 1 while server 0 is at step 2, as after a server lost its newest file.
  launch::testing::TempDir dir;
  const auto server_options = [&] {
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.token = testing::kClientToken;
    options.checkpoint_dir = dir.path();
    options.checkpoint_every_steps = 1;
    return options;
  };
  std::vector<std::unique_ptr<Server>> servers;
  for (int i = 0; i < 2; ++i) servers.push_back(start_server(server_options()));
  const auto addresses = [&] {
    return std::vector<std::string>{servers[0]->address(), servers[1]->address()};
  };
  const TableConfig config = small_table("emb", 8, 2, UpdateMode::kSync, 1);
  const at::Tensor all = at::arange(8, at::kLong);
  at::Tensor at_one;
  {
    auto client = make_client(addresses());
    client->create_table(config);
    client->push("emb", all, at::ones({8, 2}));
    client->step();
    at_one = client->lookup("emb", all);
    client->push("emb", all, at::ones({8, 2}));
    client->step();
  }
  servers[1]->shutdown(std::chrono::milliseconds(500));
  std::filesystem::remove(dir.path() + "/emb.shard1of2.step2.gwps");
  servers[1] = start_server(server_options());

  auto client = make_client(addresses());
  client->create_table(config);  // fine: the disagreement is kept for later calls
  try {
    client->lookup("emb", all);
    FAIL() << "servers at steps 2 and 1 answered a lookup";
  } catch (const BackendError& error) {
    EXPECT_TRUE(contains(error.what(), "disagree on the step")) << error.what();
    EXPECT_TRUE(contains(error.what(), "Client::resume")) << error.what();
  }
  client->resume(1);  // server 0 reloads its file of step 1
  EXPECT_EQ(client->step_count("emb"), 1);
  EXPECT_TRUE(at::equal(client->lookup("emb", all), at_one));
  // Step 0 was never checkpointed: a resume there names what the servers hold.
  try {
    client->resume(0);
    FAIL() << "resumed at a step without a checkpoint";
  } catch (const BackendError& error) {
    EXPECT_TRUE(contains(error.what(), "no checkpoint of step 0")) << error.what();
  }
  for (auto& server : servers) server->shutdown(std::chrono::milliseconds(500));
}

// Async servers count the pushes they applied, so they differ: here only server 0 owns the
// pushed ids. A trainer creating the table after another pushed (the race of two trainers
// starting) must not take that for servers restored from different checkpoints.
TEST(PsClient, AsyncServersWhoseStepsDifferStillAcceptANewTrainer) {
  Servers servers(2);
  const TableConfig config = small_table("emb", 6, 2, UpdateMode::kAsync, 2);
  auto first = make_client(servers.addresses(), 0, 2);
  first->create_table(config);
  for (int i = 0; i < 3; ++i) {
    first->push("emb", at::tensor({0, 2}, at::kLong), at::ones({2, 2}));  // server 0's ids
    first->step();
  }
  auto second = make_client(servers.addresses(), 1, 2);
  ASSERT_NO_THROW(second->create_table(config));
  EXPECT_EQ(second->step_count("emb"), 0);
  EXPECT_EQ(first->step_count("emb"), 3);
  second->push("emb", at::tensor({1}, at::kLong), at::ones({1, 2}));
  EXPECT_NO_THROW(second->step());
  EXPECT_EQ(second->step_count("emb"), 1);
}

TEST(PsClient, AnUnreachableServerIsNamedWithinTheDeadline) {
  const std::string address = "127.0.0.1:" + std::to_string(launch::pick_free_port());
  auto client = make_client({address}, 0, 1, 2s, 1s);
  const auto started = std::chrono::steady_clock::now();
  try {
    client->create_table(small_table("emb", 10, 4, UpdateMode::kAsync, 1));
    FAIL() << "no error";
  } catch (const PeerLostError& error) {
    EXPECT_TRUE(contains(error.what(), address)) << error.what();
  }
  // Not a hang: the 1 s deadline (retries included) plus a generous margin for a loaded machine.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
}

TEST(PsClient, AServerThatStopsMidRunIsNamedByLookupsAndPushes) {
  Servers servers(2);
  auto client = make_client(servers.addresses(), 0, 1, 2s, 1s);
  client->create_table(small_table("emb", 10, 4, UpdateMode::kAsync, 1));
  servers.server(1).shutdown(100ms);
  const std::string stopped = servers.addresses()[1];
  try {
    client->lookup("emb", at::tensor({1, 2}, at::kLong));
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_TRUE(contains(error.what(), stopped)) << error.what();
  }
  client->push("emb", at::tensor({1}, at::kLong), at::ones({1, 4}));
  try {
    client->flush();
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_TRUE(contains(error.what(), stopped)) << error.what();
  }
}

TEST(PsClient, ASyncStepWithATrainerThatNeverArrivesNamesIt) {
  Servers servers(2);
  auto client = make_client(servers.addresses(), 0, 2, 1s);
  client->create_table(small_table("emb", 10, 4, UpdateMode::kSync, 2));
  client->push("emb", at::tensor({1, 2}, at::kLong), at::ones({2, 4}));
  try {
    client->step();
    FAIL() << "no error";
  } catch (const TimeoutError& error) {
    EXPECT_TRUE(contains(error.what(), "trainer(s) 1 of 2")) << error.what();
  }
}

TEST(PsClient, NoServersOrNoTokenIsAConfigError) {
  ClientOptions options;
  options.token = "t";
  options.servers = {};
  if (!std::getenv("GRADWIRE_PS_ADDRS")) EXPECT_THROW(connect(options), ConfigError);
}

}  // namespace
}  // namespace gradwire::ps
