// Support for the reference checks: N-rank DDP must equal one process training on the
// concatenated batch. Models and batches are built on the main thread, deterministically, before
// any rank thread starts (torch's RNG is global); each rank thread then only trains its replica.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gradwire/ddp/ddp.h"
#include "support/rank_threads.h"

namespace gradwire::ddp::testing {

constexpr double kLearningRate = 0.05;
constexpr double kMomentum = 0.9;

struct Tolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
};
constexpr Tolerance kFloatTolerance{1e-4, 1e-5};
// fp16/bf16 compression hooks round every averaged gradient.
constexpr Tolerance kCompressedTolerance{2e-2, 2e-2};

// One global batch: rank r trains on chunk r of it, the reference on all of it.
struct Batch {
  torch::Tensor input;
  torch::Tensor target;
};

// `steps` batches of `rows` rows: input [rows, input_shape...], target [rows, outputs].
inline std::vector<Batch> make_batches(int steps, int64_t rows, std::vector<int64_t> input_shape,
                                       int64_t outputs, uint64_t seed) {
  torch::manual_seed(seed);
  input_shape.insert(input_shape.begin(), rows);
  std::vector<Batch> batches;
  for (int s = 0; s < steps; ++s) {
    batches.push_back({torch::randn(input_shape), torch::randn({rows, outputs})});
  }
  return batches;
}

// Rank `rank`'s equal share of `t` along dimension 0.
inline torch::Tensor rank_chunk(const torch::Tensor& t, int rank, int world) {
  EXPECT_EQ(t.size(0) % world, 0) << "batches must split evenly";
  return t.chunk(world, 0)[rank].contiguous();
}

// `count` models with identical initial parameters: torch is reseeded before each construction.
template <typename Factory>
auto make_replicas(int count, Factory factory, uint64_t seed = 1234) {
  std::vector<decltype(factory())> models;
  for (int i = 0; i < count; ++i) {
    torch::manual_seed(seed);
    models.push_back(factory());
  }
  return models;
}

// Parameters with shared (tied) tensors listed once, so the optimizer updates each once.
inline std::vector<torch::Tensor> unique_parameters(torch::nn::Module& module) {
  std::vector<torch::Tensor> unique;
  std::set<const void*> seen;
  for (const auto& p : module.parameters()) {
    if (seen.insert(p.unsafeGetTensorImpl()).second) unique.push_back(p);
  }
  return unique;
}

inline torch::optim::SGD make_sgd(torch::nn::Module& module) {
  return torch::optim::SGD(unique_parameters(module),
                           torch::optim::SGDOptions(kLearningRate).momentum(kMomentum));
}

// Copies of named tensors, to compare after the rank threads are gone.
using Snapshot = std::map<std::string, torch::Tensor>;

inline Snapshot snapshot_parameters(torch::nn::Module& module) {
  Snapshot out;
  for (const auto& item : module.named_parameters())
    out[item.key()] = item.value().detach().clone();
  return out;
}

inline Snapshot snapshot_buffers(torch::nn::Module& module) {
  Snapshot out;
  for (const auto& item : module.named_buffers()) out[item.key()] = item.value().detach().clone();
  return out;
}

inline void expect_close(const Snapshot& got, const Snapshot& want, Tolerance tol,
                         const std::string& label) {
  ASSERT_EQ(got.size(), want.size()) << label;
  for (const auto& [name, w] : want) {
    auto it = got.find(name);
    ASSERT_NE(it, got.end()) << label << ": missing " << name;
    const auto& g = it->second;
    ASSERT_EQ(g.sizes(), w.sizes()) << label << ": " << name;
    const auto g64 = g.to(torch::kDouble);
    const auto w64 = w.to(torch::kDouble);
    EXPECT_TRUE(torch::allclose(g64, w64, tol.rtol, tol.atol))
        << label << ": " << name << " differs by up to " << (g64 - w64).abs().max().item<double>();
  }
}

// One reference step: mean-MSE on the whole batch.
template <typename Holder>
void reference_step(Holder& model, torch::optim::SGD& optimizer, const Batch& batch) {
  optimizer.zero_grad();
  torch::mse_loss(model->forward(batch.input), batch.target).backward();
  optimizer.step();
}

template <typename Holder>
Snapshot train_reference(Holder model, const std::vector<Batch>& batches) {
  auto optimizer = make_sgd(*model);
  for (const auto& batch : batches) reference_step(model, optimizer, batch);
  return snapshot_parameters(*model);
}

// What each rank ends with.
struct DdpRun {
  std::vector<Snapshot> parameters;                  // per rank
  std::vector<Snapshot> buffers;                     // per rank
  std::vector<DdpStats> stats;                       // per rank
  std::vector<std::set<std::string>> defined_grads;  // per rank: parameters whose .grad exists
};

// Trains replicas[r] on rank r with DDP: per batch zero_grad, mean-MSE on the rank's chunk,
// backward, step. replicas.size() is the world size.
template <typename Holder>
DdpRun train_ddp(std::vector<Holder> replicas, const std::vector<Batch>& batches,
                 const DdpOptions& options, const std::string& backend = "gloo") {
  const int world = static_cast<int>(replicas.size());
  DdpRun run;
  run.parameters.resize(world);
  run.buffers.resize(world);
  run.stats.resize(world);
  run.defined_grads.resize(world);
  gradwire::testing::run_ranks(
      world,
      [&](int rank, World& w) {
        auto& model = replicas[rank];
        DistributedDataParallel<typename Holder::ContainedType> ddp(model, w.communicator(),
                                                                    options);
        auto optimizer = make_sgd(*model);
        for (const auto& batch : batches) {
          optimizer.zero_grad();
          auto output = ddp(rank_chunk(batch.input, rank, world));
          torch::mse_loss(output, rank_chunk(batch.target, rank, world)).backward();
          optimizer.step();
        }
        run.parameters[rank] = snapshot_parameters(*model);
        run.buffers[rank] = snapshot_buffers(*model);
        run.stats[rank] = ddp.stats();
        for (const auto& item : model->named_parameters()) {
          if (item.value().grad().defined()) run.defined_grads[rank].insert(item.key());
        }
      },
      std::chrono::seconds(20), {}, backend);
  return run;
}

inline void expect_all_ranks_close(const DdpRun& run, const Snapshot& reference, Tolerance tol) {
  for (size_t r = 0; r < run.parameters.size(); ++r) {
    expect_close(run.parameters[r], reference, tol, "rank " + std::to_string(r));
  }
}

}  // namespace gradwire::ddp::testing
