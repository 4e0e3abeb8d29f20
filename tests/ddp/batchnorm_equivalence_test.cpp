// DDP with BatchNorm in train mode. BatchNorm normalises with each rank's local batch statistics,
// so the reference forwards each rank's chunk separately and averages the chunk losses. With
// broadcast_buffers, every forward starts from rank 0's buffers: the reference keeps the
// buffers that chunk 0's forward produced.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "gradwire/ddp/ddp.h"
#include "reference_training.h"
#include "test_models.h"

namespace gradwire::ddp::testing {
// A namespace of its own: in the unity build its helpers meet other files'.
namespace batchnorm_equivalence {
namespace {

constexpr int kSteps = 4;
constexpr int64_t kRowsPerRank = 4;

// The reference for `world` ranks with local BatchNorm statistics and rank 0's buffers.
void reference_step_per_chunk(BnCnn& model, torch::optim::SGD& optimizer, const Batch& batch,
                              int world) {
  optimizer.zero_grad();
  std::vector<torch::Tensor> losses;
  std::vector<torch::Tensor> rank0_buffers;
  for (int r = 0; r < world; ++r) {
    auto output = model->forward(rank_chunk(batch.input, r, world));
    losses.push_back(torch::mse_loss(output, rank_chunk(batch.target, r, world)));
    if (r == 0) {
      for (const auto& b : model->buffers()) rank0_buffers.push_back(b.detach().clone());
    }
  }
  torch::stack(losses).mean().backward();
  // After backward: BatchNorm's backward holds the running statistics and would refuse them
  // modified in place. In train mode they do not affect the gradients.
  {
    torch::NoGradGuard no_grad;
    auto buffers = model->buffers();
    for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(rank0_buffers[i]);
  }
  optimizer.step();
}

TEST(DdpBatchNorm, TrainModeMatchesPerChunkReference) {
  torch::set_num_threads(1);
  const int world = 2;
  auto batches = make_batches(kSteps, kRowsPerRank * world, {1, 6, 6}, 3, 29);
  auto replicas = make_replicas(world + 1, [] { return BnCnn(); });

  auto reference_model = replicas.back();
  replicas.pop_back();
  auto optimizer = make_sgd(*reference_model);
  for (const auto& batch : batches)
    reference_step_per_chunk(reference_model, optimizer, batch, world);
  auto reference_parameters = snapshot_parameters(*reference_model);
  auto reference_buffers = snapshot_buffers(*reference_model);
  ASSERT_EQ(reference_buffers.at("bn.num_batches_tracked").item<int64_t>(), kSteps);

  DdpOptions options;
  ASSERT_TRUE(options.broadcast_buffers);
  auto run = train_ddp(replicas, batches, options);
  expect_all_ranks_close(run, reference_parameters, kFloatTolerance);
  // Rank 0's buffers are those of the reference; other ranks' last forward updated theirs
  // locally after the last broadcast.
  expect_close(run.buffers[0], reference_buffers, kFloatTolerance, "rank 0 buffers");
  // The running statistics moved: the buffer comparison is not trivially true.
  EXPECT_FALSE(torch::allclose(reference_buffers.at("bn.running_mean"), torch::zeros({4})));
}

}  // namespace
}  // namespace batchnorm_equivalence
}  // namespace gradwire::ddp::testing
