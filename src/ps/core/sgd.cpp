// Sparse SGD with optional momentum (sparse_optimizer.h): PyTorch's SGD (dampening 0, no
// Nesterov, no weight decay) on the rows touched.
#include <ATen/ATen.h>

#include "ps/core/sparse_optimizers.h"

namespace gradwire::ps {
namespace {

class SparseSgd : public RowOptimizer {
 public:
  SparseSgd(const OptimizerConfig& config, int64_t rows, int64_t dim)
      : RowOptimizer("sgd", sgd_state_names(config), rows, dim),
        lr_(config.lr),
        momentum_(config.momentum) {}

  void update(at::Tensor& weights, const at::Tensor& rows, const at::Tensor& grads,
              int64_t /*step*/) override {
    at::Tensor change = grads;
    if (momentum_ != 0) {
      at::Tensor& buffer = state_tensor(0);
      // buffer starts at zero: the first touch gives buffer = grad, as PyTorch's first step.
      at::Tensor buffer_rows = buffer.index_select(0, rows);
      buffer_rows.mul_(momentum_).add_(grads, 1);
      buffer.index_copy_(0, rows, buffer_rows);
      change = buffer_rows;
    }
    at::Tensor weight_rows = weights.index_select(0, rows);
    weight_rows.add_(change, -lr_);
    weights.index_copy_(0, rows, weight_rows);
  }

 private:
  const double lr_;
  const double momentum_;
};

}  // namespace

std::vector<std::string> sgd_state_names(const OptimizerConfig& config) {
  if (config.momentum == 0) return {};
  return {"momentum_buffer"};
}

std::unique_ptr<SparseOptimizer> make_sgd(const OptimizerConfig& config, int64_t rows,
                                          int64_t dim) {
  return std::make_unique<SparseSgd>(config, rows, dim);
}

}  // namespace gradwire::ps
