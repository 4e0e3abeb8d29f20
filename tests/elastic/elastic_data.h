// The elastic tests' job, shared by the worker and the one-process reference.
#pragma once

#include <torch/torch.h>

#include "gradwire/data/distributed_sampler.h"

namespace gradwire::elastic_test {

inline constexpr double kLearningRate = 0.05;
inline constexpr double kMomentum = 0.9;

struct Data {
  torch::Tensor x;  // [240, 8] float64
  torch::Tensor y;  // [240, 1]
};

inline Data make_data() {
  torch::manual_seed(11);
  Data data;
  data.x = torch::randn({240, 8}, torch::kDouble);
  const auto truth = torch::linspace(-1, 1, 8, torch::kDouble).reshape({8, 1});
  data.y = data.x.matmul(truth) + 0.1 * torch::randn({240, 1}, torch::kDouble);
  return data;
}

inline torch::nn::Linear make_model() {
  torch::manual_seed(5);
  torch::nn::Linear model(8, 1);
  model->to(torch::kDouble);
  return model;
}

inline data::DistributedSamplerOptions sampler_options() {
  data::DistributedSamplerOptions options;
  options.seed = 3;
  return options;
}

}  // namespace gradwire::elastic_test
