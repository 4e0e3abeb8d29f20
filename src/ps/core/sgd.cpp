// Sparse SGD with optional momentum (sparse_optimizer.h): PyTorch's SGD (dampening 0, no
// Nesterov, no weight decay) on the rows touched.
#include <ATen/ATen.h>

#include <cstdint>

#include "ps/core/sparse_optimizers.h"

namespace gradwire::ps {
namespace {

class SparseSgd : public RowOptimizer {
 public:
  SparseSgd(const OptimizerConfig& config, int64_t rows, int64_t dim)
      : RowOptimizer("sgd", sgd_state_names(config), rows, dim),
        lr_(config.lr),
        momentum_(config.momentum) {}

  void update(at::Tensor& weight_rows, std::vector<at::Tensor>& state_rows, const at::Tensor& grads,
              int64_t /*step*/) override {
    if (momentum_ != 0) {
      // The buffer starts at zero: the first touch gives buffer = grad, as PyTorch's first step.
      at::Tensor& buffer_rows = state_rows[0];
      if (weight_rows.is_contiguous() && buffer_rows.is_contiguous() && grads.is_contiguous()) {
        // One pass instead of three (mul_, add_, add_): a dense step's rows are memory-bound.
        float* weight = weight_rows.data_ptr<float>();
        float* buffer = buffer_rows.data_ptr<float>();
        const float* grad = grads.data_ptr<float>();
        const auto momentum = static_cast<float>(momentum_);
        const auto lr = static_cast<float>(lr_);
        const int64_t count = weight_rows.numel();
        for (int64_t i = 0; i < count; ++i) {
          const float next = buffer[i] * momentum + grad[i];
          buffer[i] = next;
          weight[i] -= lr * next;
        }
        return;
      }
      buffer_rows.mul_(momentum_).add_(grads, 1);
      weight_rows.add_(buffer_rows, -lr_);
    } else {
      weight_rows.add_(grads, -lr_);
    }
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
