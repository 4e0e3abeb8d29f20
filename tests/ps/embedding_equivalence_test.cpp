// The parameter servers' correctness proof: 2 trainers of a RemoteEmbeddingBag in sync mode, each
// on its half of every global batch, end with the table one process gets by training a local
// torch::nn::EmbeddingBag with torch::optim on the whole batch, for each optimizer, both bag modes
// and 2 or 3 servers. Every row is in every global batch, so PyTorch's dense optimizers (which
// also move rows whose gradient is zero) and the servers' lazy sparse ones take the same steps.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <tuple>

#include "client_test_support.h"
#include "gradwire/ps/embedding.h"
#include "ps/core/initializer.h"

namespace gradwire::ps {
namespace {

using testing::make_client;
using testing::run_trainers;
using testing::Servers;
using testing::Transport;

constexpr int kTrainers = 2;
constexpr int kSteps = 4;
constexpr int64_t kRows = 10;
constexpr int64_t kDim = 4;
constexpr int64_t kBagsPerTrainer = 3;

// One global batch: ids with offsets per trainer (bags of varying length), and targets.
struct GlobalBatch {
  std::vector<at::Tensor> ids, offsets, targets;  // per trainer
  at::Tensor all_ids, all_offsets, all_targets;   // concatenated, as one process sees them
};

// Every row once (shuffled) plus 8 random repeats, cut into 2 x 3 bags of varying length.
GlobalBatch make_batch(at::Generator& generator) {
  const at::Tensor ids =
      at::cat({at::randperm(kRows, generator, at::kLong), at::randint(kRows, {8}, generator)});
  const std::vector<int64_t> lengths = {2, 4, 3, 3, 1, 5};  // sums to 18 = ids.numel()
  GlobalBatch batch;
  int64_t start = 0;
  for (int t = 0; t < kTrainers; ++t) {
    std::vector<int64_t> offsets;
    const int64_t first = start;
    for (int64_t b = 0; b < kBagsPerTrainer; ++b) {
      offsets.push_back(start - first);
      start += lengths[t * kBagsPerTrainer + b];
    }
    batch.ids.push_back(ids.slice(0, first, start).contiguous());
    batch.offsets.push_back(at::tensor(offsets, at::kLong));
    batch.targets.push_back(at::randn({kBagsPerTrainer, kDim}, generator));
  }
  batch.all_ids = ids;
  batch.all_offsets = at::tensor(std::vector<int64_t>{0, 2, 6, 9, 12, 13}, at::kLong);
  batch.all_targets = at::cat(batch.targets);
  return batch;
}

TableConfig table_for(OptimizerKind kind, int trainers) {
  TableConfig config;
  config.name = "emb";
  config.num_rows = kRows;
  config.dim = kDim;
  config.initializer.seed = 11;
  config.mode = UpdateMode::kSync;
  config.num_trainers = trainers;
  config.optimizer.kind = kind;
  config.optimizer.lr = kind == OptimizerKind::kSgd ? 0.1 : 0.05;
  if (kind == OptimizerKind::kSgd) config.optimizer.momentum = 0.9;
  if (kind == OptimizerKind::kAdagrad) config.optimizer.eps = 1e-10;  // PyTorch's default
  return config;
}

std::unique_ptr<torch::optim::Optimizer> local_optimizer(const TableConfig& config,
                                                         std::vector<at::Tensor> params) {
  const OptimizerConfig& o = config.optimizer;
  switch (o.kind) {
    case OptimizerKind::kSgd:
      return std::make_unique<torch::optim::SGD>(
          params, torch::optim::SGDOptions(o.lr).momentum(o.momentum));
    case OptimizerKind::kAdagrad:
      return std::make_unique<torch::optim::Adagrad>(params,
                                                     torch::optim::AdagradOptions(o.lr).eps(o.eps));
    case OptimizerKind::kAdam:
      return std::make_unique<torch::optim::Adam>(
          params, torch::optim::AdamOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps));
  }
  return nullptr;
}

using Case = std::tuple<OptimizerKind, BagMode, int>;
// The third member: ClientOptions::defer_pushes (pushes travel with the step, one call per server).
using Param = std::tuple<Case, Transport, bool>;

class SyncEquivalence : public ::testing::TestWithParam<Param> {};

TEST_P(SyncEquivalence, TwoTrainersEqualOneProcessOnTheConcatenatedBatch) {
  torch::set_num_threads(1);
  // Not a structured binding: lambdas may not capture those in C++17.
  const OptimizerKind kind = std::get<0>(std::get<0>(GetParam()));
  const BagMode mode = std::get<1>(std::get<0>(GetParam()));
  const int num_servers = std::get<2>(std::get<0>(GetParam()));
  const Transport transport = std::get<1>(GetParam());
  const bool defer_pushes = std::get<2>(GetParam());
  const TableConfig config = table_for(kind, kTrainers);
  at::Generator generator = at::detail::createCPUGenerator(5);
  std::vector<GlobalBatch> batches;
  for (int s = 0; s < kSteps; ++s) batches.push_back(make_batch(generator));

  // The reference: a local EmbeddingBag starting from the servers' initial rows.
  const at::Tensor initial = initial_rows(config.initializer, at::arange(kRows, at::kLong), kDim);
  torch::nn::EmbeddingBagMode local_mode = torch::kSum;
  if (mode == BagMode::kMean) local_mode = torch::kMean;
  torch::nn::EmbeddingBag local(torch::nn::EmbeddingBagOptions(kRows, kDim).mode(local_mode));
  {
    torch::NoGradGuard no_grad;
    local->weight.copy_(initial);
  }
  auto optimizer = local_optimizer(config, {local->weight});
  for (const GlobalBatch& batch : batches) {
    optimizer->zero_grad();
    torch::mse_loss(local(batch.all_ids, batch.all_offsets), batch.all_targets).backward();
    optimizer->step();
  }

  Servers servers(num_servers, testing::one_process(transport));
  ASSERT_NO_THROW(run_trainers(kTrainers, [&](int t) {
    ClientOptions options = testing::with_transport(
        testing::client_options(servers.addresses(), t, kTrainers), transport);
    options.defer_pushes = defer_pushes;
    auto client = connect(options);
    RemoteEmbeddingBag bags(client, RemoteEmbeddingBagOptions{config, mode});
    for (int server = 0; server < num_servers; ++server) {
      EXPECT_EQ(client->transport(server), testing::transport_name(transport))
          << "trainer " << t << ", server " << server;
    }
    for (const GlobalBatch& batch : batches) {
      torch::mse_loss(bags(batch.ids[t], batch.offsets[t]), batch.targets[t]).backward();
      client->step();
    }
  }));

  auto reader = make_client(servers.addresses(), 0, kTrainers);
  reader->create_table(config);
  EXPECT_EQ(reader->step_count("emb"), kSteps);
  const at::Tensor trained = reader->lookup("emb", at::arange(kRows, at::kLong));
  EXPECT_TRUE(trained.allclose(local->weight.detach(), 1e-4, 1e-5))
      << "max difference " << (trained - local->weight).abs().max().item<float>();
  EXPECT_FALSE(trained.allclose(initial, 1e-3, 1e-3)) << "training did not move the rows";
}

std::string name_of(const ::testing::TestParamInfo<Param>& info) {
  const auto [kind, mode, servers] = std::get<0>(info.param);
  return std::string(to_string(kind)) + (mode == BagMode::kSum ? "_sum_" : "_mean_") +
         std::to_string(servers) + "servers_" + to_string(std::get<1>(info.param)) +
         (std::get<2>(info.param) ? "_deferred" : "");
}

const auto kCases = ::testing::Values(
    Case{OptimizerKind::kSgd, BagMode::kSum, 2}, Case{OptimizerKind::kSgd, BagMode::kMean, 3},
    Case{OptimizerKind::kAdagrad, BagMode::kMean, 2},
    Case{OptimizerKind::kAdagrad, BagMode::kSum, 3}, Case{OptimizerKind::kAdam, BagMode::kMean, 2},
    Case{OptimizerKind::kAdam, BagMode::kSum, 3});

// Every case on every transport (calls over shared memory to servers in separate hubs or started
// together, gRPC, another host's trainer).
INSTANTIATE_TEST_SUITE_P(
    Optimizers, SyncEquivalence,
    ::testing::Combine(kCases,
                       ::testing::Values(Transport::kShared, Transport::kSharedOneProcess,
                                         Transport::kBytes, Transport::kOtherHost),
                       ::testing::Values(false)),
    name_of);
// And with deferred pushes (docs/ps.md "Batched calls") on shared memory and over gRPC.
INSTANTIATE_TEST_SUITE_P(
    DeferredPushes, SyncEquivalence,
    ::testing::Combine(kCases, ::testing::Values(Transport::kShared, Transport::kBytes),
                       ::testing::Values(true)),
    name_of);

// RemoteEmbedding (no pooling) likewise, with duplicate ids in one trainer's batch.
TEST(RemoteEmbedding, SyncTrainingEqualsALocalEmbedding) {
  torch::set_num_threads(1);
  const TableConfig config = table_for(OptimizerKind::kAdagrad, kTrainers);
  at::Generator generator = at::detail::createCPUGenerator(9);
  std::vector<at::Tensor> batches;  // [trainers, 2, 7]: every row plus repeats, 2-D ids
  for (int s = 0; s < kSteps; ++s) {
    batches.push_back(
        at::cat({at::randperm(kRows, generator, at::kLong), at::randint(kRows, {18}, generator)})
            .view({kTrainers, 2, 7}));
  }
  const at::Tensor target = at::randn({kTrainers, 2, 7, kDim}, generator);

  torch::nn::Embedding local(kRows, kDim);
  {
    torch::NoGradGuard no_grad;
    local->weight.copy_(initial_rows(config.initializer, at::arange(kRows, at::kLong), kDim));
  }
  auto optimizer = local_optimizer(config, {local->weight});
  for (const at::Tensor& ids : batches) {
    optimizer->zero_grad();
    torch::mse_loss(local(ids), target).backward();
    optimizer->step();
  }

  Servers servers(2);
  ASSERT_NO_THROW(run_trainers(kTrainers, [&](int t) {
    auto client = make_client(servers.addresses(), t, kTrainers);
    RemoteEmbedding embedding(client, config);
    for (const at::Tensor& ids : batches) {
      torch::mse_loss(embedding(ids[t]), target[t]).backward();
      client->step();
    }
  }));
  auto reader = make_client(servers.addresses());
  TableConfig same = config;
  reader->create_table(same);
  const at::Tensor trained = reader->lookup("emb", at::arange(kRows, at::kLong));
  EXPECT_TRUE(trained.allclose(local->weight.detach(), 1e-4, 1e-5))
      << "max difference " << (trained - local->weight).abs().max().item<float>();
}

// Async mode: two trainers pushing as they go fit a small regression problem.
TEST(AsyncTraining, TwoTrainersConverge) {
  torch::set_num_threads(1);
  TableConfig config = table_for(OptimizerKind::kAdagrad, kTrainers);
  config.mode = UpdateMode::kAsync;
  config.optimizer.lr = 0.3;
  at::Generator generator = at::detail::createCPUGenerator(21);
  const at::Tensor wanted = at::randn({kRows, kDim}, generator);  // the rows to learn
  Servers servers(2);
  std::vector<double> first_loss(kTrainers), last_loss(kTrainers);
  ASSERT_NO_THROW(run_trainers(kTrainers, [&](int t) {
    auto client = make_client(servers.addresses(), t, kTrainers);
    RemoteEmbeddingBag bags(client, RemoteEmbeddingBagOptions{config, BagMode::kSum});
    at::Generator own = at::detail::createCPUGenerator(100 + t);
    for (int step = 0; step < 150; ++step) {
      const at::Tensor ids = at::randint(kRows, {8, 3}, own);
      const at::Tensor target = wanted.index_select(0, ids.flatten()).view({8, 3, kDim}).sum(1);
      const at::Tensor loss = torch::mse_loss(bags(ids), target);
      loss.backward();
      client->step();
      if (step == 0) first_loss[t] = loss.item<double>();
      last_loss[t] = loss.item<double>();
    }
  }));
  for (int t = 0; t < kTrainers; ++t) {
    EXPECT_LT(last_loss[t], 0.05 * first_loss[t]) << "trainer " << t;
  }
}

}  // namespace
}  // namespace gradwire::ps
