// DistributedDataParallel on CUDA modules over nccl: N ranks (one GPU each) training their share
// of every batch end with the parameters of one process training the whole batch on a GPU, with
// the default hook, the fp16 and bf16 hooks, no_sync and unused parameters.
#include <gtest/gtest.h>

#include "gpu_ranks.h"
#include "gradwire/ddp/comm_hook.h"
#include "reference_training.h"
#include "test_models.h"

namespace gradwire::ddp::testing {
namespace {

using gradwire::testing::on_gpus;

constexpr int kSteps = 4;

torch::Device gpu(int index) { return torch::Device(torch::kCUDA, index); }

// Snapshots compared on the CPU.
Snapshot on_cpu(const Snapshot& snapshot) {
  Snapshot out;
  for (const auto& [name, t] : snapshot) out[name] = t.cpu();
  return out;
}

struct CudaCase {
  int ranks;
  std::string hook;   // make_comm_hook name
  bool accumulate;    // every other step under no_sync: gradients accumulate over two steps
};

std::string case_name(const ::testing::TestParamInfo<CudaCase>& info) {
  return std::to_string(info.param.ranks) + "ranks_" + info.param.hook +
         (info.param.accumulate ? "_no_sync" : "");
}

class CudaDdp : public ::testing::TestWithParam<CudaCase> {
 protected:
  void SetUp() override { GRADWIRE_NEED_GPUS(GetParam().ranks); }
};

// The reference: one process, GPU 0, the whole batch; with `accumulate`, two batches' gradients
// summed before each step (the first of a pair under no_sync in the DDP run).
Snapshot reference_on_gpu(Mlp model, const std::vector<Batch>& batches, bool accumulate) {
  model->to(gpu(0));
  auto optimizer = make_sgd(*model);
  for (size_t s = 0; s < batches.size(); ++s) {
    if (!accumulate || s % 2 == 0) optimizer.zero_grad();
    torch::mse_loss(model->forward(batches[s].input.to(gpu(0))), batches[s].target.to(gpu(0)))
        .backward();
    if (!accumulate || s % 2 == 1) optimizer.step();
  }
  return on_cpu(snapshot_parameters(*model));
}

TEST_P(CudaDdp, RanksEqualOneProcessOnTheWholeBatch) {
  const CudaCase c = GetParam();
  const auto batches = make_batches(kSteps, 8 * c.ranks, {12}, 3, /*seed=*/7);
  auto replicas = make_replicas(c.ranks + 1, [] { return Mlp(std::vector<int64_t>{12, 32, 16, 3}); });
  const Snapshot reference = reference_on_gpu(replicas.back(), batches, c.accumulate);

  std::vector<Snapshot> got(c.ranks);
  on_gpus(c.ranks, [&](int rank, World& world) {
    auto& model = replicas[rank];
    model->to(gpu(rank));
    DdpOptions options;
    options.comm_hook = make_comm_hook(c.hook);
    DistributedDataParallel<MlpImpl> ddp(model, world.communicator(), options);
    // Buckets live on the parameters' GPU.
    for (const auto& bucket : ddp.stats().buckets) EXPECT_EQ(bucket.device, gpu(rank).str());
    auto optimizer = make_sgd(*model);
    for (size_t s = 0; s < batches.size(); ++s) {
      const auto input = rank_chunk(batches[s].input, rank, c.ranks).to(gpu(rank));
      const auto target = rank_chunk(batches[s].target, rank, c.ranks).to(gpu(rank));
      if (!c.accumulate || s % 2 == 0) optimizer.zero_grad();
      if (c.accumulate && s % 2 == 0) {
        auto guard = ddp.no_sync();
        torch::mse_loss(ddp(input), target).backward();
        continue;
      }
      torch::mse_loss(ddp(input), target).backward();
      optimizer.step();
    }
    got[rank] = on_cpu(snapshot_parameters(*model));
  });
  const Tolerance tolerance = c.hook == "allreduce" ? kFloatTolerance : kCompressedTolerance;
  for (int r = 0; r < c.ranks; ++r) {
    expect_close(got[r], reference, tolerance, "rank " + std::to_string(r));
  }
}

INSTANTIATE_TEST_SUITE_P(Hooks, CudaDdp,
                         ::testing::Values(CudaCase{1, "allreduce", false},
                                           CudaCase{1, "fp16", false}, CudaCase{1, "bf16", false},
                                           CudaCase{1, "allreduce", true},
                                           CudaCase{2, "allreduce", false},
                                           CudaCase{2, "fp16", true}),
                         case_name);

// Unused parameters on CUDA: the used map is reduced over nccl (a CUDA tensor), and the unused
// layer's gradient stays undefined, as in one process.
TEST(CudaDdpUnused, FindUnusedParametersOnOneGpu) {
  const auto batches = make_batches(kSteps, 8, {8}, 4, /*seed=*/3);
  auto model = make_replicas(1, [] { return UnusedBranch(); })[0];
  on_gpus(1, [&](int, World& world) {
    model->to(gpu(0));
    DdpOptions options;
    options.find_unused_parameters = true;
    DistributedDataParallel<UnusedBranchImpl> ddp(model, world.communicator(), options);
    auto optimizer = make_sgd(*model);
    for (const auto& batch : batches) {
      optimizer.zero_grad();
      torch::mse_loss(ddp(batch.input.to(gpu(0))), batch.target.to(gpu(0))).backward();
      optimizer.step();
    }
    EXPECT_FALSE(model->unused->weight.grad().defined());
    EXPECT_TRUE(model->fc1->weight.grad().defined());
    EXPECT_TRUE(model->fc1->weight.grad().is_cuda());
  });
}

}  // namespace
}  // namespace gradwire::ddp::testing
