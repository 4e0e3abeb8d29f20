// The optimizers behind make_sparse_optimizer (internal to sparse_optimizer*.cpp, sgd.cpp,
// adagrad.cpp, adam.cpp): their factories and the state storage they share.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "ps/core/sparse_optimizer.h"

namespace gradwire::ps {

std::unique_ptr<SparseOptimizer> make_sgd(const OptimizerConfig& config, int64_t rows, int64_t dim);
std::vector<std::string> sgd_state_names(const OptimizerConfig& config);
std::unique_ptr<SparseOptimizer> make_adagrad(const OptimizerConfig& config, int64_t rows,
                                              int64_t dim);
std::vector<std::string> adagrad_state_names(const OptimizerConfig& config);
std::unique_ptr<SparseOptimizer> make_adam(const OptimizerConfig& config, int64_t rows,
                                           int64_t dim);
std::vector<std::string> adam_state_names(const OptimizerConfig& config);

// GRADWIRE_CHECKs of SparseOptimizer::apply's preconditions.
void check_apply_arguments(const at::Tensor& weights, const at::Tensor& rows,
                           const at::Tensor& grads);

// Named float32 [rows, dim] state tensors, zero at first.
class StateTensors {
 public:
  StateTensors(std::vector<std::string> names, int64_t rows, int64_t dim);
  at::Tensor& get(size_t index);
  const OptimizerState& all() const { return tensors_; }
  // Checks every name and shape first, then copies (SparseOptimizer::load_state).
  void load(const OptimizerState& state, const char* optimizer);

 private:
  int64_t rows_;
  int64_t dim_;
  OptimizerState tensors_;
};

}  // namespace gradwire::ps
