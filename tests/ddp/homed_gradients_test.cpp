// Note [homed gradients] (src/ddp/reducer.cpp): in the default mode each .grad keeps its tensor
// object but moves its memory into its bucket, so later iterations copy nothing. These tests pin
// what a user can see of that: the same .grad object, a storage of its own and not a view, and
// training that still equals one process's, also when .grad is reset to none or shares its
// storage with another tensor (which keeps it where it is).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <map>

#include "gradwire/ddp/ddp.h"
#include "reference_training.h"
#include "test_models.h"

namespace gradwire::ddp::testing {
// A namespace of its own: in the unity build its helpers meet other files'.
namespace homed_gradients {
namespace {

constexpr int kSteps = 4;
constexpr int kWorld = 2;
constexpr int64_t kRowsPerRank = 4;

Mlp deep_mlp() { return Mlp(std::vector<int64_t>{16, 16, 16, 16, 4}); }

struct GradRecord {
  const c10::TensorImpl* impl = nullptr;
  const void* data = nullptr;
};

class HomedGradients : public ::testing::TestWithParam<std::string> {};  // backend

// Batches with `features` inputs, kWorld replicas from `factory`, and what one process reaches
// on the whole batches from the same start.
template <typename Holder>
struct Prepared {
  std::vector<Batch> batches;
  std::vector<Holder> replicas;
  Snapshot reference;
};
template <typename Factory>
auto prepare(Factory factory, int64_t features, uint64_t seed) {
  torch::set_num_threads(1);
  auto batches = make_batches(kSteps, kRowsPerRank * kWorld, {features}, 4, seed);
  auto replicas = make_replicas(kWorld + 1, factory);
  auto reference = train_reference(replicas.back(), batches);
  replicas.pop_back();
  return Prepared<typename decltype(replicas)::value_type>{batches, replicas, reference};
}

TEST_P(HomedGradients, GradKeepsItsObjectAndLivesInOneBucketFromTheSecondStepOn) {
  auto prepared = prepare(deep_mlp, 16, 11);
  std::vector<Snapshot> parameters(kWorld);
  // per rank, per step, per parameter
  std::vector<std::vector<std::vector<GradRecord>>> records(kWorld);
  std::vector<std::vector<torch::Tensor>> last_grads(kWorld);
  gradwire::testing::run_ranks(
      kWorld,
      [&](int rank, World& w) {
        auto& model = prepared.replicas[rank];
        DistributedDataParallel<MlpImpl> ddp(model, w.communicator(), DdpOptions{});
        auto optimizer = make_sgd(*model);
        for (const auto& batch : prepared.batches) {
          // Zeroed in place, as 1.13's zero_grad() does; 2.x's default resets .grad to none, and
          // a reset gradient is homed again at the next backward (docs/ddp.md, Homed gradients).
          for (auto& p : model->parameters()) {
            if (p.grad().defined()) p.mutable_grad().zero_();
          }
          auto output = ddp(rank_chunk(batch.input, rank, kWorld));
          torch::mse_loss(output, rank_chunk(batch.target, rank, kWorld)).backward();
          optimizer.step();
          std::vector<GradRecord> step;
          for (const auto& p : model->parameters()) {
            step.push_back({p.grad().unsafeGetTensorImpl(), p.grad().data_ptr()});
          }
          records[rank].push_back(std::move(step));
        }
        parameters[rank] = snapshot_parameters(*model);
        for (const auto& p : model->parameters()) last_grads[rank].push_back(p.grad());
      },
      std::chrono::seconds(20), {}, GetParam());

  for (int r = 0; r < kWorld; ++r) {
    expect_close(parameters[r], prepared.reference, kFloatTolerance, "rank " + std::to_string(r));
    const auto& steps = records[r];
    for (size_t i = 0; i < steps[0].size(); ++i) {
      for (int s = 1; s < kSteps; ++s) {
        // The rebuild before step 2 moves the memory, never the object.
        EXPECT_EQ(steps[s][i].impl, steps[0][i].impl) << "rank " << r << " parameter " << i;
        if (s >= 2) EXPECT_EQ(steps[s][i].data, steps[1][i].data) << "rank " << r;
      }
    }
    // Each gradient has a storage of its own, is no view, and all lie side by side in the one
    // bucket this small model needs.
    std::vector<torch::Tensor> grads = last_grads[r];
    for (const auto& g : grads) {
      EXPECT_FALSE(g.is_view());
      EXPECT_EQ(g.storage().nbytes(), static_cast<size_t>(g.numel() * g.element_size()));
    }
    std::sort(grads.begin(), grads.end(), [](const torch::Tensor& a, const torch::Tensor& b) {
      return a.data_ptr() < b.data_ptr();
    });
    for (size_t k = 1; k < grads.size(); ++k) {
      const auto* end = static_cast<const char*>(grads[k - 1].data_ptr()) +
                        grads[k - 1].numel() * grads[k - 1].element_size();
      EXPECT_EQ(grads[k].data_ptr(), end) << "rank " << r << ": gradients not in one bucket";
    }
  }
}

// .grad reset to none every other step (autograd makes a new one, which moves again), and one
// gradient whose storage the caller shares through a view: that one stays where it is and still
// receives the average, as PyTorch's default writes it into .grad.
TEST_P(HomedGradients, ResetToNoneAndSharedStorageStillMatchOneProcess) {
  auto prepared = prepare(deep_mlp, 16, 13);
  std::vector<Snapshot> parameters(kWorld);
  std::vector<int> shared_seen(kWorld, 0);
  gradwire::testing::run_ranks(
      kWorld,
      [&](int rank, World& w) {
        auto& model = prepared.replicas[rank];
        auto params = model->parameters();
        // The caller holds a view of the first parameter's gradient from the start.
        params[0].mutable_grad() = torch::zeros_like(params[0]);
        const torch::Tensor held = params[0].grad().view({-1});
        const void* held_data = held.data_ptr();
        DistributedDataParallel<MlpImpl> ddp(model, w.communicator(), DdpOptions{});
        auto optimizer = make_sgd(*model);
        for (int s = 0; s < kSteps; ++s) {
          for (size_t i = 1; i < params.size(); ++i) {
            if (s % 2 == 1) {
              params[i].mutable_grad().reset();
            } else if (params[i].grad().defined()) {
              params[i].mutable_grad().zero_();
            }
          }
          params[0].mutable_grad().zero_();
          const auto& batch = prepared.batches[s];
          auto output = ddp(rank_chunk(batch.input, rank, kWorld));
          torch::mse_loss(output, rank_chunk(batch.target, rank, kWorld)).backward();
          if (params[0].grad().data_ptr() == held_data && held.equal(params[0].grad().view({-1}))) {
            ++shared_seen[rank];
          }
          optimizer.step();
        }
        parameters[rank] = snapshot_parameters(*model);
      },
      std::chrono::seconds(20), {}, GetParam());

  for (int r = 0; r < kWorld; ++r) {
    expect_close(parameters[r], prepared.reference, kFloatTolerance, "rank " + std::to_string(r));
    EXPECT_EQ(shared_seen[r], kSteps) << "rank " << r << ": the shared gradient moved";
  }
}

// With find_unused_parameters, a parameter no rank uses keeps each rank's own .grad (PyTorch's
// behaviour), although its gradient lay in the bucket that was reduced; the used ones train as
// one process would.
TEST_P(HomedGradients, ParameterUnusedEverywhereKeepsEachRanksOwnGradient) {
  auto prepared = prepare([] { return UnusedBranch(); }, 8, 17);
  std::vector<Snapshot> parameters(kWorld);
  std::vector<torch::Tensor> kept(kWorld);
  gradwire::testing::run_ranks(
      kWorld,
      [&](int rank, World& w) {
        auto& model = prepared.replicas[rank];
        const torch::Tensor own = torch::full({4, 8}, static_cast<float>(rank + 1));
        model->unused->weight.mutable_grad() = own.clone();
        DdpOptions options;
        options.find_unused_parameters = true;
        DistributedDataParallel<UnusedBranchImpl> ddp(model, w.communicator(), options);
        auto optimizer =
            torch::optim::SGD(std::vector<torch::Tensor>{model->fc1->weight, model->fc1->bias,
                                                         model->fc2->weight, model->fc2->bias},
                              torch::optim::SGDOptions(kLearningRate).momentum(kMomentum));
        for (const auto& batch : prepared.batches) {
          optimizer.zero_grad();
          auto output = ddp(rank_chunk(batch.input, rank, kWorld));
          torch::mse_loss(output, rank_chunk(batch.target, rank, kWorld)).backward();
          optimizer.step();
        }
        parameters[rank] = snapshot_parameters(*model);
        kept[rank] = model->unused->weight.grad().clone();
      },
      std::chrono::seconds(20), {}, GetParam());

  for (int r = 0; r < kWorld; ++r) {
    Snapshot used = parameters[r];
    for (const char* name : {"unused.weight", "unused.bias"}) used.erase(name);
    Snapshot want = prepared.reference;
    for (const char* name : {"unused.weight", "unused.bias"}) want.erase(name);
    expect_close(used, want, kFloatTolerance, "rank " + std::to_string(r));
    EXPECT_TRUE(kept[r].equal(torch::full({4, 8}, static_cast<float>(r + 1)))) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, HomedGradients, ::testing::Values("gloo", "shm"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace homed_gradients
}  // namespace gradwire::ddp::testing
