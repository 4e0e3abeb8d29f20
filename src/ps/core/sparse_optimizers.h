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

// What the optimizers share: apply() checks its preconditions (GRADWIRE_CHECK), hands update()
// the rows touched of the weights and of every state tensor, and writes them back, without
// autograd; the state is named float32 [rows, dim] tensors, zero at first, which load_state()
// checks by name and shape before it copies any. Note [row views]: when the rows are runs of
// consecutive local rows, kMinRunRows or more on average (a dense table's push), update() gets
// views of each run and changes the tensors in place; otherwise copies gathered by index,
// scattered back after update().
inline constexpr int64_t kMinRunRows = 16;

class RowOptimizer : public SparseOptimizer {
 public:
  void apply(at::Tensor& weights, const at::Tensor& rows, const at::Tensor& grads,
             int64_t step) final;
  OptimizerState state() const final { return state_; }
  void load_state(const OptimizerState& state) final;

 protected:
  // `name` ("sgd") names the optimizer in errors.
  RowOptimizer(const char* name, std::vector<std::string> state_names, int64_t rows, int64_t dim);
  // The update of the touched rows in place: `weight_rows` and `state_rows` (in state() order)
  // are [n, dim] with row i the one grads row i belongs to; `step` as in apply().
  virtual void update(at::Tensor& weight_rows, std::vector<at::Tensor>& state_rows,
                      const at::Tensor& grads, int64_t step) = 0;

 private:
  const char* name_;
  int64_t rows_;
  int64_t dim_;
  OptimizerState state_;
};

}  // namespace gradwire::ps
