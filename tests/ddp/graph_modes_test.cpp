// static_graph, parameters used on some ranks only, and the construction-time broadcast.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "gradwire/ddp/ddp.h"
#include "reference_training.h"
#include "test_models.h"

namespace gradwire::ddp::testing {
namespace {

constexpr int kSteps = 4;
constexpr int kWorld = 2;
constexpr int64_t kRowsPerRank = 4;

TEST(DdpGraphModes, StaticGraphWithUnusedBranchMatchesAndRebuilds) {
  torch::set_num_threads(1);
  auto batches = make_batches(kSteps, kRowsPerRank * kWorld, {8}, 4, 21);
  auto replicas = make_replicas(kWorld + 1, [] { return UnusedBranch(); });
  auto reference = train_reference(replicas.back(), batches);
  replicas.pop_back();
  DdpOptions options;
  options.static_graph = true;
  auto run = train_ddp(replicas, batches, options);
  expect_all_ranks_close(run, reference, kFloatTolerance);
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_TRUE(run.stats[r].buckets_rebuilt) << "static_graph rebuilds despite unused params";
    EXPECT_EQ(run.defined_grads[r].count("unused.weight"), 0u);
  }
}

// fc2(relu(fc1(x))) plus, when asked, extra(x): the branch is data dependent.
struct MaybeExtraImpl : torch::nn::Module {
  MaybeExtraImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        extra(register_module("extra", torch::nn::Linear(8, 4))),
        fc2(register_module("fc2", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x, bool use_extra) {
    torch::Tensor y = fc2->forward(torch::relu(fc1->forward(x)));
    return use_extra ? y + extra->forward(x) : y;
  }
  torch::nn::Linear fc1, extra, fc2;
};
TORCH_MODULE(MaybeExtra);

// Rank 0 uses the branch, rank 1 does not: the branch's gradient is rank 0's divided by 2, as
// the mean of the two ranks' losses gives.
TEST(DdpGraphModes, BranchUsedOnSomeRanksIsAveragedWithZeros) {
  torch::set_num_threads(1);
  auto batches = make_batches(kSteps, kRowsPerRank * kWorld, {8}, 4, 31);
  auto replicas = make_replicas(kWorld + 1, [] { return MaybeExtra(); });

  MaybeExtra reference_model = replicas.back();
  replicas.pop_back();
  auto optimizer = make_sgd(*reference_model);
  for (const auto& batch : batches) {
    optimizer.zero_grad();
    torch::Tensor loss = 0.5 * (torch::mse_loss(reference_model->forward(
                                                    rank_chunk(batch.input, 0, kWorld), true),
                                                rank_chunk(batch.target, 0, kWorld)) +
                                torch::mse_loss(reference_model->forward(
                                                    rank_chunk(batch.input, 1, kWorld), false),
                                                rank_chunk(batch.target, 1, kWorld)));
    loss.backward();
    optimizer.step();
  }
  Snapshot reference = snapshot_parameters(*reference_model);

  std::vector<Snapshot> result(kWorld);
  gradwire::testing::run_ranks(kWorld, [&](int rank, World& world) {
    MaybeExtra& model = replicas[rank];
    DdpOptions options;
    options.find_unused_parameters = true;
    DistributedDataParallel ddp(model, world.communicator(), options);
    auto sgd = make_sgd(*model);
    for (const auto& batch : batches) {
      sgd.zero_grad();
      torch::Tensor out = ddp(rank_chunk(batch.input, rank, kWorld), rank == 0);
      torch::mse_loss(out, rank_chunk(batch.target, rank, kWorld)).backward();
      sgd.step();
    }
    result[rank] = snapshot_parameters(*model);
  });
  for (int r = 0; r < kWorld; ++r) {
    expect_close(result[r], reference, kFloatTolerance, "rank " + std::to_string(r));
  }
}

// Replicas built with different seeds hold rank 0's parameters and buffers after construction.
TEST(DdpGraphModes, ConstructionBroadcastsRankZerosState) {
  torch::set_num_threads(1);
  std::vector<BnCnn> replicas;
  for (int r = 0; r < kWorld; ++r) {
    torch::manual_seed(100 + r);
    replicas.push_back(BnCnn());
    replicas.back()->bn->running_mean.fill_(static_cast<float>(r + 1));
  }
  Snapshot rank0_params = snapshot_parameters(*replicas[0]);
  Snapshot rank0_buffers = snapshot_buffers(*replicas[0]);
  ASSERT_FALSE(torch::allclose(rank0_params.at("conv.weight"),
                               replicas[1]->conv->weight.detach()));

  std::vector<Snapshot> params(kWorld), buffers(kWorld);
  gradwire::testing::run_ranks(kWorld, [&](int rank, World& world) {
    DistributedDataParallel ddp(replicas[rank], world.communicator());
    params[rank] = snapshot_parameters(*replicas[rank]);
    buffers[rank] = snapshot_buffers(*replicas[rank]);
  });
  for (int r = 0; r < kWorld; ++r) {
    expect_close(params[r], rank0_params, {0, 0}, "parameters of rank " + std::to_string(r));
    expect_close(buffers[r], rank0_buffers, {0, 0}, "buffers of rank " + std::to_string(r));
  }
}

}  // namespace
}  // namespace gradwire::ddp::testing
