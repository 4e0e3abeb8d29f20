// The elastic hybrid job of docs/elastic.md "Parameter servers", shared by the in-process test
// (elastic_hybrid_test.cpp, trainers as threads), the worker program (elastic_hybrid_worker.cpp,
// trainers as processes under gradwire-run --elastic) and its test
// (elastic_hybrid_process_test.cpp): the data, the table, the dense layer, the sampler's options
// and the one-process reference that follows a membership schedule.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "gradwire/data/distributed_sampler.h"
#include "gradwire/ps/table.h"
#include "ps/core/initializer.h"

namespace gradwire::ps::elastic_hybrid {

inline constexpr int kSteps = 12;
inline constexpr int64_t kDieAt = 3;  // trainer 0.1.0 dies in the step that begins here
inline constexpr int64_t kRows = 12;
inline constexpr int64_t kDim = 4;
inline constexpr int64_t kClasses = 3;
inline constexpr int64_t kSamples = 240;
inline constexpr int64_t kBatch = 4;  // bags per trainer and step
inline constexpr int64_t kIdsPerBag = 3;
inline constexpr double kDenseLr = 0.05;

struct Data {
  at::Tensor bags;    // [kSamples, kIdsPerBag]
  at::Tensor labels;  // [kSamples]
};

inline Data make_data() {
  at::Generator generator = at::detail::createCPUGenerator(23);
  return {at::randint(kRows, {kSamples, kIdsPerBag}, generator, at::kLong),
          at::randint(kClasses, {kSamples}, generator, at::kLong)};
}

inline TableConfig make_table() {
  TableConfig table;
  table.name = "bags";
  table.num_rows = kRows;
  table.dim = kDim;
  table.initializer.seed = 4;
  table.mode = UpdateMode::kSync;
  table.num_trainers = 3;
  table.optimizer.kind = OptimizerKind::kSgd;  // no momentum: rows a step misses stay put
  table.optimizer.lr = 0.2;
  return table;
}

// The same layer on every thread: seeding and drawing from the global generator is one step.
inline torch::nn::Linear make_dense() {
  static std::mutex generator;
  const std::lock_guard<std::mutex> lock(generator);
  torch::manual_seed(8);
  return torch::nn::Linear(kDim, kClasses);
}

inline data::DistributedSamplerOptions sampler_options() {
  data::DistributedSamplerOptions options;
  options.seed = 5;
  return options;
}

// The one-process reference: each step of `world_at_step` trains on the batches of every live
// trainer, concatenated (the samplers reshard as the job's did). Returns the table's rows and the
// dense layer. `weights`, when given, receives the dense weight after each step.
inline std::pair<at::Tensor, torch::nn::Linear> reference(
    const std::map<int64_t, int>& world_at_step, const TableConfig& table,
    std::map<int64_t, at::Tensor>* weights = nullptr) {
  const Data data = make_data();
  torch::nn::EmbeddingBag bags(
      torch::nn::EmbeddingBagOptions(kRows, kDim).mode(torch::enumtype::kMean()));
  {
    torch::NoGradGuard no_grad;
    bags->weight.copy_(initial_rows(table.initializer, at::arange(kRows, at::kLong), kDim));
  }
  torch::nn::Linear dense = make_dense();
  torch::optim::SGD table_optimizer({bags->weight}, torch::optim::SGDOptions(table.optimizer.lr));
  torch::optim::SGD dense_optimizer(dense->parameters(),
                                    torch::optim::SGDOptions(kDenseLr).momentum(0.9));
  std::vector<data::DistributedSampler> samplers;
  for (const auto& [step, world] : world_at_step) {
    if (static_cast<int>(samplers.size()) != world) {
      std::vector<data::DistributedSampler> next;
      for (int rank = 0; rank < world; ++rank) {
        next.push_back(samplers.empty() ? data::DistributedSampler(kSamples, sampler_options())
                                        : samplers.front());
        next.back().reshard(rank, world);
      }
      samplers = std::move(next);
    }
    std::vector<int64_t> indices;
    for (auto& sampler : samplers) {
      const auto taken = sampler.next(kBatch);
      indices.insert(indices.end(), taken->begin(), taken->end());
    }
    const at::Tensor index = torch::tensor(indices);
    table_optimizer.zero_grad();
    dense_optimizer.zero_grad();
    torch::nn::functional::cross_entropy(dense(bags(data.bags.index_select(0, index))),
                                         data.labels.index_select(0, index))
        .backward();
    table_optimizer.step();
    dense_optimizer.step();
    if (weights) (*weights)[step] = dense->weight.detach().clone();
  }
  return {bags->weight.detach().clone(), dense};
}

}  // namespace gradwire::ps::elastic_hybrid
