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
std::unique_ptr<SparseOptimizer> make_assign(const OptimizerConfig& config, int64_t rows,
                                             int64_t dim);
std::vector<std::string> assign_state_names(const OptimizerConfig& config);

// What the optimizers share: apply() checks its preconditions (GRADWIRE_CHECK) and runs
// update() without autograd; the state is named float32 [rows, dim] tensors, zero at first, which
// load_state() checks by name and shape before it copies any.
class RowOptimizer : public SparseOptimizer {
 public:
  void apply(at::Tensor& weights, const at::Tensor& rows, const at::Tensor& grads,
             int64_t step) final;
  OptimizerState state() const final { return state_; }
  void load_state(const OptimizerState& state) final;

 protected:
  // `name` ("sgd") names the optimizer in errors.
  RowOptimizer(const char* name, std::vector<std::string> state_names, int64_t rows, int64_t dim);
  at::Tensor& state_tensor(size_t index) { return state_.at(index).second; }
  // The update of the rows `rows` of `weights` by `grads` (apply()'s contract).
  virtual void update(at::Tensor& weights, const at::Tensor& rows, const at::Tensor& grads,
                      int64_t step) = 0;

 private:
  const char* name_;
  int64_t rows_;
  int64_t dim_;
  OptimizerState state_;
};

}  // namespace gradwire::ps
