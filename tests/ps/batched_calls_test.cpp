// Batched calls (docs/ps.md "Batched calls"): the packing of parts into one call per server, a
// lookup of several tables equal to one lookup per table, deferred pushes that travel with the
// next call to their server, and the steps of several sync tables in one call per server, on
// shared memory and over gRPC.
#include <gtest/gtest.h>

#include <future>
#include <thread>
#include <tuple>

#include "client_test_support.h"
#include "gradwire/ps/embedding.h"
#include "ps/client/batch_plan.h"
#include "ps/core/initializer.h"
#include "rpc/wire.h"

namespace gradwire::ps {
namespace {

using testing::Servers;
using testing::small_table;
using testing::Transport;

namespace batched_calls_test {

v1::LookupRequest lookup_of(const std::string& table, int64_t ids) {
  v1::LookupRequest request;
  request.set_table(table);
  rpc::encode_tensor(at::arange(ids, at::kLong), request.mutable_ids());
  return request;
}

v1::PushRequest push_of(const std::string& table, int64_t rows) {
  v1::PushRequest request;
  request.set_table(table);
  rpc::encode_tensor(at::arange(rows, at::kLong), request.mutable_ids());
  rpc::encode_tensor(at::ones({rows, 4}), request.mutable_grads());
  return request;
}

std::shared_ptr<Client> client_for(const Servers& servers, Transport transport, int rank = 0,
                                   int trainers = 1, bool defer = false) {
  ClientOptions options = testing::with_transport(
      testing::client_options(servers.addresses(), rank, trainers), transport);
  options.defer_pushes = defer;
  return connect(options);
}

}  // namespace batched_calls_test

using batched_calls_test::client_for;
using batched_calls_test::lookup_of;
using batched_calls_test::push_of;

TEST(BatchPlan, AServersPartsShareABatchWithinItsLimitsInTheOrderGiven) {
  // Server 0 takes requests of 1000 bytes and answers of 600; server 1 is unlimited.
  BatchPlan plan([](int server) {
    return server == 0 ? BatchLimits{1000, 600} : BatchLimits{1 << 20, 1 << 20};
  });
  plan.add(0, push_of("a", 10));  // about 250 bytes
  const PartPlace first = plan.add(0, lookup_of("a", 5), 200);
  const PartPlace other = plan.add(1, lookup_of("b", 5), 200);
  const PartPlace second = plan.add(0, lookup_of("b", 5), 200);
  const PartPlace third = plan.add(0, lookup_of("c", 5), 200);  // the answers pass 600: a new batch
  ASSERT_EQ(plan.batches().size(), 3u);
  EXPECT_EQ(first.batch, 0u);
  EXPECT_EQ(first.index, 0);
  EXPECT_EQ(second.batch, 0u);
  EXPECT_EQ(second.index, 1);
  EXPECT_EQ(other.batch, 1u);
  EXPECT_EQ(third.batch, 2u);
  EXPECT_EQ(third.index, 0);
  EXPECT_EQ(plan.batches()[0].request.pushes_size(), 1);
  EXPECT_EQ(plan.batches()[0].request.lookups(1).table(), "b");
  EXPECT_EQ(plan.batches()[2].server, 0);
  EXPECT_FALSE(plan.batches()[0].last);  // server 0's second batch runs after it where it matters
  EXPECT_TRUE(plan.batches()[1].last);
  EXPECT_TRUE(plan.batches()[2].last);
  EXPECT_TRUE(plan.split());
  for (const auto& batch : plan.batches()) {
    EXPECT_LE(batch.answer_bytes, batch.server == 0 ? 600 : 1 << 20);
    EXPECT_GE(batch.request_bytes, static_cast<int64_t>(batch.request.ByteSizeLong()));
  }
  // A push larger than the limit alone still gets a batch of its own.
  plan.add(0, push_of("big", 100));
  EXPECT_EQ(plan.batches().size(), 4u);
  EXPECT_EQ(plan.batches()[3].request.pushes_size(), 1);
}

class BatchedCalls : public ::testing::TestWithParam<Transport> {};

TEST_P(BatchedCalls, ALookupOfSeveralTablesEqualsOneLookupPerTable) {
  Servers servers(3, testing::one_process(GetParam()));
  auto client = client_for(servers, GetParam());
  client->create_table(small_table("wide", 40, 5, UpdateMode::kAsync, 1));
  client->create_table(small_table("narrow", 7, 3, UpdateMode::kAsync, 1));
  const std::vector<TableIds> lookups = {
      {"wide", at::tensor({39, 0, 7, 7, 3, 19, 11}, at::kLong)},
      {"narrow", at::tensor({6, 1, 2}, at::kLong)},
      {"wide", at::tensor({4}, at::kLong)},
      {"narrow", at::empty({0}, at::kLong)},
  };
  const std::vector<at::Tensor> rows = client->lookup_many(lookups);
  ASSERT_EQ(rows.size(), lookups.size());
  for (size_t i = 0; i < lookups.size(); ++i) {
    const at::Tensor one = client->lookup(lookups[i].table, lookups[i].ids);
    EXPECT_TRUE(at::equal(rows[i], one)) << "lookup " << i;
    const TableConfig& config = client->table(lookups[i].table);
    EXPECT_TRUE(at::equal(rows[i], initial_rows(config.initializer, lookups[i].ids, config.dim)))
        << "lookup " << i;
  }
  EXPECT_THROW(client->lookup_many(
                   {{"wide", at::tensor({1}, at::kLong)}, {"narrow", at::tensor({7}, at::kLong)}}),
               InvalidArgument);
  EXPECT_TRUE(client->lookup_many({}).empty());
}

TEST_P(BatchedCalls, DeferredPushesTravelWithTheNextCallToTheirServer) {
  Servers servers(2, testing::one_process(GetParam()));
  auto trainer = client_for(servers, GetParam(), 0, 1, /*defer=*/true);
  auto reader = client_for(servers, GetParam());
  TableConfig config = small_table("emb", 6, 2, UpdateMode::kAsync, 1);
  config.optimizer.lr = 1.0;
  trainer->create_table(config);
  reader->create_table(config);
  const at::Tensor all = at::arange(6, at::kLong);
  const at::Tensor before = reader->lookup("emb", all);

  // Ids 0 and 1 live on different servers (ids go round robin); nothing is sent yet.
  trainer->push("emb", at::tensor({0, 1, 0}, at::kLong), at::ones({3, 2}));
  EXPECT_TRUE(at::equal(reader->lookup("emb", all), before));
  // A lookup of id 0 carries the push to its server, and reads the row after it.
  at::Tensor expected = before.clone();
  expected[0] -= 2;
  EXPECT_TRUE(at::allclose(trainer->lookup("emb", at::tensor({0}, at::kLong)), expected[0]));
  EXPECT_TRUE(at::allclose(reader->lookup("emb", all), expected));
  // The other server's push waits for flush().
  trainer->flush();
  expected[1] -= 1;
  EXPECT_TRUE(at::allclose(reader->lookup("emb", all), expected));
  // And step() sends what is left too.
  trainer->push("emb", at::tensor({5}, at::kLong), at::full({1, 2}, 3.0f));
  trainer->step();
  expected[5] -= 3;
  EXPECT_TRUE(at::allclose(reader->lookup("emb", all), expected));
}

TEST_P(BatchedCalls, StepsOfSeveralSyncTablesCarryingDeferredPushesEqualTheMeanGradients) {
  constexpr int kTrainers = 2;
  constexpr int kSteps = 3;
  Servers servers(2, testing::one_process(GetParam()));
  std::vector<TableConfig> tables;
  for (const char* name : {"a", "b", "c"}) {
    TableConfig config = small_table(name, 8, 3, UpdateMode::kSync, kTrainers);
    config.optimizer.lr = 1.0;
    tables.push_back(config);
  }
  std::vector<at::Tensor> initial;
  for (const TableConfig& config : tables) {
    initial.push_back(initial_rows(config.initializer, at::arange(8, at::kLong), 3));
  }
  ASSERT_NO_THROW(testing::run_trainers(kTrainers, [&](int t) {
    auto client = client_for(servers, GetParam(), t, kTrainers, /*defer=*/t == 0);
    for (const TableConfig& config : tables) client->create_table(config);
    for (int step = 0; step < kSteps; ++step) {
      // Table i: trainer t pushes (t + 1) * (i + 1) for ids {i, 7 - i}, every step.
      for (size_t i = 0; i < tables.size(); ++i) {
        const auto id = static_cast<int64_t>(i);
        client->push(tables[i].name, at::tensor({id, 7 - id}, at::kLong),
                     at::full({2, 3}, static_cast<float>((t + 1) * (i + 1))));
      }
      client->step();
      for (const TableConfig& config : tables) {
        EXPECT_EQ(client->step_count(config.name), step + 1) << config.name;
      }
    }
  }));
  auto reader = client_for(servers, GetParam(), 0, kTrainers);
  for (size_t i = 0; i < tables.size(); ++i) {
    reader->create_table(tables[i]);
    EXPECT_EQ(reader->step_count(tables[i].name), kSteps);
    // The mean of 1 x (i + 1) and 2 x (i + 1), every step.
    at::Tensor expected = initial[i].clone();
    const float change = kSteps * 1.5f * static_cast<float>(i + 1);
    expected[static_cast<int64_t>(i)] -= change;
    expected[7 - static_cast<int64_t>(i)] -= change;
    EXPECT_TRUE(at::allclose(reader->lookup(tables[i].name, at::arange(8, at::kLong)), expected))
        << tables[i].name;
  }
}

TEST(CarriedPushes, FlushWaitsForALookupOfAnotherThreadCarryingItsPushes) {
  // The other thread's lookup carries this thread's deferred push and then waits, in the server,
  // for a dense table's values: this thread's flush() may return only once that call ended.
  Servers servers(1);
  auto client = client_for(servers, Transport::kBytes, 0, 1, /*defer=*/true);
  TableConfig emb = small_table("emb", 4, 2, UpdateMode::kAsync, 1);
  emb.optimizer.lr = 1.0;
  TableConfig dense = small_table("dense", 4, 2, UpdateMode::kSync, 1);
  dense.kind = TableKind::kDense;
  client->create_table(emb);
  client->create_table(dense);
  ASSERT_TRUE(client->awaiting_values("dense"));
  const at::Tensor before = client->lookup("emb", at::arange(4, at::kLong));

  client->push("emb", at::tensor({2}, at::kLong), at::ones({1, 2}));
  auto lookup = std::async(std::launch::async, [&] {
    return client->lookup_many({{"dense", at::tensor({1}, at::kLong)}});
  });
  auto reader = client_for(servers, Transport::kBytes);
  reader->create_table(emb);
  at::Tensor expected = before.clone();
  expected[2] -= 1;
  // The push went with the lookup (applied before its wait), not with a flush.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!at::allclose(reader->lookup("emb", at::arange(4, at::kLong)), expected) &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(at::allclose(reader->lookup("emb", at::arange(4, at::kLong)), expected));
  auto flushed = std::async(std::launch::async, [&] { client->flush(); });
  EXPECT_EQ(flushed.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "flush() returned while a lookup carrying its push was still in flight";
  client->assign("dense", at::arange(4, at::kLong), at::full({4, 2}, 5.0f));
  EXPECT_TRUE(at::equal(lookup.get().front(), at::full({1, 2}, 5.0f)));
  flushed.get();
}

TEST_P(BatchedCalls, ACollectionTrainsExactlyAsOneRemoteEmbeddingBagPerTable) {
  constexpr int kTrainers = 2;
  std::vector<RemoteEmbeddingBagOptions> tables;
  for (const auto& [name, dim, mode] :
       {std::tuple{"users", 4, BagMode::kSum}, std::tuple{"items", 3, BagMode::kMean}}) {
    TableConfig config = small_table(name, 12, dim, UpdateMode::kSync, kTrainers);
    config.optimizer.kind = OptimizerKind::kAdagrad;
    tables.push_back(RemoteEmbeddingBagOptions{config, mode});
  }
  // Per trainer and step: table 0's bags as 2-D input, table 1's as ids with offsets.
  const auto batch = [](int trainer, int step) {
    at::Generator generator = at::detail::createCPUGenerator(100 * trainer + step);
    return std::vector<at::Tensor>{at::randint(12, {3, 2}, generator),
                                   at::randint(12, {5}, generator)};
  };
  const at::Tensor offsets = at::tensor({0, 2, 2}, at::kLong);  // an empty bag too
  const auto train = [&](bool collection, std::vector<std::string> addresses) {
    testing::run_trainers(kTrainers, [&](int t) {
      ClientOptions options =
          testing::with_transport(testing::client_options(addresses, t, kTrainers), GetParam());
      options.defer_pushes = collection;  // the collection's pushes travel with the step
      auto client = connect(options);
      RemoteEmbeddingBagCollection together(nullptr);
      std::vector<RemoteEmbeddingBag> apart;
      if (collection) {
        together = RemoteEmbeddingBagCollection(client, tables);
      } else {
        for (const auto& table : tables) apart.emplace_back(client, table);
      }
      for (int step = 0; step < 3; ++step) {
        const std::vector<at::Tensor> inputs = batch(t, step);
        std::vector<at::Tensor> pooled;
        if (collection) {
          pooled = together(inputs, std::vector<at::Tensor>{at::Tensor(), offsets});
        } else {
          pooled = {apart[0](inputs[0]), apart[1](inputs[1], offsets)};
        }
        (pooled[0].pow(2).sum() + pooled[1].sum()).backward();
        client->step();
      }
    });
  };
  Servers apart_servers(2, testing::one_process(GetParam()));
  Servers together_servers(2, testing::one_process(GetParam()));
  ASSERT_NO_THROW(train(false, apart_servers.addresses()));
  ASSERT_NO_THROW(train(true, together_servers.addresses()));
  auto apart = client_for(apart_servers, GetParam(), 0, kTrainers);
  auto together = client_for(together_servers, GetParam(), 0, kTrainers);
  for (const auto& table : tables) {
    apart->create_table(table.table);
    together->create_table(table.table);
    const at::Tensor all = at::arange(12, at::kLong);
    const at::Tensor expected = apart->lookup(table.table.name, all);
    EXPECT_TRUE(at::equal(together->lookup(table.table.name, all), expected)) << table.table.name;
    EXPECT_FALSE(at::equal(expected, initial_rows(table.table.initializer, all, table.table.dim)))
        << "training did not move " << table.table.name;
    EXPECT_EQ(together->step_count(table.table.name), 3);
  }
  auto client = client_for(together_servers, GetParam());
  using Tables = std::vector<RemoteEmbeddingBagOptions>;
  EXPECT_THROW(RemoteEmbeddingBagCollection(client, Tables{tables[0], tables[0]}), InvalidArgument);
  RemoteEmbeddingBagCollection collection(client, Tables{tables[0]});
  EXPECT_THROW(collection(batch(0, 0)), InvalidArgument);  // two inputs for one table
}

INSTANTIATE_TEST_SUITE_P(Transports, BatchedCalls,
                         ::testing::Values(Transport::kShared, Transport::kBytes),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace gradwire::ps
