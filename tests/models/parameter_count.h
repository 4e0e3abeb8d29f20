// What the model tests count: the number of elements of a module's parameters.
#pragma once

#include <torch/nn/module.h>

#include <cstdint>

namespace gradwire::models::testing {

inline int64_t count_parameters(const torch::nn::Module& module) {
  int64_t total = 0;
  for (const auto& parameter : module.parameters()) total += parameter.numel();
  return total;
}

}  // namespace gradwire::models::testing
