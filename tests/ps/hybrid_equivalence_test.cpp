// The hybrid model of reference 000: remote embedding bags on the servers (sync mode) and a
// DDP-replicated dense layer on 2 trainers equal one process training a local EmbeddingBag and the
// same dense layer on the concatenated batch.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "client_test_support.h"
#include "gradwire/ddp/ddp.h"
#include "gradwire/ps/embedding.h"
#include "ps/core/initializer.h"
#include "support/rank_threads.h"

namespace gradwire::ps {
// A namespace of its own: in the unity build its helpers meet other files'.
namespace hybrid_equivalence {
namespace {

using testing::make_client;
using testing::Servers;
using testing::Transport;

constexpr int kTrainers = 2;
constexpr int kSteps = 5;
constexpr int64_t kRows = 12;
constexpr int64_t kDim = 6;
constexpr int64_t kClasses = 3;
constexpr int64_t kBagsPerTrainer = 4;
constexpr int64_t kIdsPerBag = 3;  // 2 trainers x 4 bags x 3 ids = 24: every row and 12 repeats

struct Batch {
  at::Tensor ids;     // [trainers * bags, ids per bag]
  at::Tensor labels;  // [trainers * bags]
};

class HybridModel : public ::testing::TestWithParam<Transport> {};

TEST_P(HybridModel, TwoTrainersWithDdpEqualOneProcess) {
  torch::set_num_threads(1);
  const Transport transport = GetParam();
  TableConfig table;
  table.name = "bags";
  table.num_rows = kRows;
  table.dim = kDim;
  table.initializer.seed = 4;
  table.mode = UpdateMode::kSync;
  table.num_trainers = kTrainers;
  table.optimizer.kind = OptimizerKind::kSgd;
  table.optimizer.lr = 0.2;
  table.optimizer.momentum = 0.9;
  constexpr double kDenseLr = 0.05;

  at::Generator generator = at::detail::createCPUGenerator(17);
  std::vector<Batch> batches;
  for (int s = 0; s < kSteps; ++s) {
    const at::Tensor ids = at::cat(
        {at::randperm(kRows, generator, at::kLong), at::randint(kRows, {kRows}, generator)});
    batches.push_back({ids.view({kTrainers * kBagsPerTrainer, kIdsPerBag}),
                       at::randint(kClasses, {kTrainers * kBagsPerTrainer}, generator)});
  }
  auto make_dense = [] {
    torch::manual_seed(8);
    return torch::nn::Linear(kDim, kClasses);
  };

  // The reference: one process, the whole batch.
  torch::nn::EmbeddingBag local_bags(
      torch::nn::EmbeddingBagOptions(kRows, kDim).mode(torch::enumtype::kMean()));
  {
    torch::NoGradGuard no_grad;
    local_bags->weight.copy_(initial_rows(table.initializer, at::arange(kRows, at::kLong), kDim));
  }
  torch::nn::Linear local_dense = make_dense();
  torch::optim::SGD local_table_optimizer(
      {local_bags->weight}, torch::optim::SGDOptions(table.optimizer.lr).momentum(0.9));
  torch::optim::SGD local_dense_optimizer(local_dense->parameters(),
                                          torch::optim::SGDOptions(kDenseLr).momentum(0.9));
  for (const Batch& batch : batches) {
    local_table_optimizer.zero_grad();
    local_dense_optimizer.zero_grad();
    torch::nn::functional::cross_entropy(local_dense(local_bags(batch.ids)), batch.labels)
        .backward();
    local_table_optimizer.step();
    local_dense_optimizer.step();
  }

  // Two trainers: DDP for the dense layer, the servers for the table.
  std::vector<torch::nn::Linear> denses = {make_dense(), make_dense()};
  Servers servers(2, testing::one_process(transport));
  gradwire::testing::run_ranks(kTrainers, [&](int rank, World& world) {
    auto client = connect(testing::with_transport(
        testing::client_options(servers.addresses(), rank, kTrainers), transport));
    RemoteEmbeddingBag bags(client, RemoteEmbeddingBagOptions{table, BagMode::kMean});
    for (int server = 0; server < 2; ++server) {
      EXPECT_EQ(client->transport(server), testing::transport_name(transport));
    }
    ddp::DistributedDataParallel dense(denses[rank], world.communicator());
    torch::optim::SGD optimizer(denses[rank]->parameters(),
                                torch::optim::SGDOptions(kDenseLr).momentum(0.9));
    for (const Batch& batch : batches) {
      optimizer.zero_grad();
      const at::Tensor ids = batch.ids.chunk(kTrainers)[rank].contiguous();
      const at::Tensor labels = batch.labels.chunk(kTrainers)[rank].contiguous();
      torch::nn::functional::cross_entropy(dense(bags(ids)), labels).backward();
      optimizer.step();
      client->step();
    }
  });

  for (int rank = 0; rank < kTrainers; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_TRUE(denses[rank]->weight.allclose(local_dense->weight, 1e-4, 1e-5));
    EXPECT_TRUE(denses[rank]->bias.allclose(local_dense->bias, 1e-4, 1e-5));
  }
  auto reader = make_client(servers.addresses(), 0, kTrainers);
  reader->create_table(table);
  const at::Tensor trained = reader->lookup("bags", at::arange(kRows, at::kLong));
  EXPECT_TRUE(trained.allclose(local_bags->weight.detach(), 1e-4, 1e-5))
      << "max difference " << (trained - local_bags->weight).abs().max().item<float>();
  EXPECT_FALSE(local_dense->weight.allclose(make_dense()->weight)) << "training did not move";
}

INSTANTIATE_TEST_SUITE_P(Transports, HybridModel,
                         ::testing::Values(Transport::kShared, Transport::kSharedOneProcess,
                                           Transport::kBytes, Transport::kOtherHost),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace hybrid_equivalence
}  // namespace gradwire::ps
