// Gradient accumulation with no_sync(): k micro-steps without communication, one synchronised
// micro-step, one optimizer step. .grad accumulates the sum over the k+1 micro-steps and the
// synchronised backward averages that sum over ranks. With every micro-step's loss divided by
// k+1, the result is the gradient of the mean loss over all (k+1) x ranks micro-batches: one
// reference step on their concatenation.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "gradwire/ddp/ddp.h"
#include "reference_training.h"
#include "test_models.h"

namespace gradwire::ddp::testing {
namespace {

constexpr int kOuterSteps = 3;
constexpr int kUnsyncedMicroSteps = 2;  // k
constexpr int kMicroSteps = kUnsyncedMicroSteps + 1;
constexpr int64_t kRowsPerMicroBatch = 3;


// Micro-batch `micro` of `rank`: the global batch is split into kMicroSteps parts, each into
// `world` rank chunks.
torch::Tensor micro_batch(const torch::Tensor& t, int micro, int rank, int world) {
  return rank_chunk(rank_chunk(t, micro, kMicroSteps), rank, world);
}

class NoSync : public ::testing::TestWithParam<bool> {};  // gradient_as_bucket_view

TEST_P(NoSync, AccumulatedMicroStepsMatchOneReferenceStep) {
  torch::set_num_threads(1);
  const int world = 2;
  auto batches = make_batches(kOuterSteps, kRowsPerMicroBatch * kMicroSteps * world, {5}, 3, 31);
  auto replicas = make_replicas(world + 1, small_mlp);
  auto reference = train_reference(replicas.back(), batches);
  replicas.pop_back();

  DdpOptions options;
  options.gradient_as_bucket_view = GetParam();
  std::vector<Snapshot> parameters(world);
  std::vector<int64_t> iterations(world);
  gradwire::testing::run_ranks(
      world,
      [&](int rank, World& w) {
        auto& model = replicas[rank];
        DistributedDataParallel<MlpImpl> ddp(model, w.communicator(), options);
        auto optimizer = make_sgd(*model);
        auto micro_loss = [&](const Batch& batch, int micro) {
          auto output = ddp(micro_batch(batch.input, micro, rank, world));
          return torch::mse_loss(output, micro_batch(batch.target, micro, rank, world)) /
                 kMicroSteps;
        };
        for (const auto& batch : batches) {
          optimizer.zero_grad();
          {
            auto guard = ddp.no_sync();
            for (int m = 0; m < kUnsyncedMicroSteps; ++m) micro_loss(batch, m).backward();
          }
          micro_loss(batch, kUnsyncedMicroSteps).backward();
          optimizer.step();
        }
        parameters[rank] = snapshot_parameters(*model);
        iterations[rank] = ddp.stats().iterations;
      },
      std::chrono::seconds(20));

  for (int r = 0; r < world; ++r) {
    expect_close(parameters[r], reference, kFloatTolerance, "rank " + std::to_string(r));
    // Only the synchronised backward of each outer step is an iteration.
    EXPECT_EQ(iterations[r], kOuterSteps) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(BucketView, NoSync, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "bucket_view" : "copy"; });

}  // namespace
}  // namespace gradwire::ddp::testing
