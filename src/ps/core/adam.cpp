// Sparse Adam (sparse_optimizer.h): PyTorch's Adam (no amsgrad, no weight decay) on the rows
// touched, its bias corrections taken at the table's update count (SparseAdam's semantics).
#include <ATen/ATen.h>

#include <cmath>

#include "gradwire/common/error.h"
#include "ps/core/sparse_optimizers.h"

namespace gradwire::ps {
namespace {

class SparseAdam : public RowOptimizer {
 public:
  SparseAdam(const OptimizerConfig& config, int64_t rows, int64_t dim)
      : RowOptimizer("adam", adam_state_names(config), rows, dim),
        lr_(config.lr),
        beta1_(config.beta1),
        beta2_(config.beta2),
        eps_(config.eps) {}

  void update(at::Tensor& weight_rows, std::vector<at::Tensor>& state_rows, const at::Tensor& grads,
              int64_t step) override {
    GRADWIRE_CHECK_GE(step, 1);
    const double bias_correction1 = 1 - std::pow(beta1_, static_cast<double>(step));
    const double bias_correction2 = 1 - std::pow(beta2_, static_cast<double>(step));
    at::Tensor& avg_rows = state_rows[0];
    at::Tensor& avg_sq_rows = state_rows[1];
    avg_rows.mul_(beta1_).add_(grads, 1 - beta1_);
    avg_sq_rows.mul_(beta2_).addcmul_(grads, grads, 1 - beta2_);
    const at::Tensor denom = (avg_sq_rows.sqrt() / std::sqrt(bias_correction2)).add_(eps_);
    const double step_size = lr_ / bias_correction1;
    weight_rows.addcdiv_(avg_rows, denom, -step_size);
  }

 private:
  const double lr_;
  const double beta1_;
  const double beta2_;
  const double eps_;
};

}  // namespace

std::vector<std::string> adam_state_names(const OptimizerConfig& /*config*/) {
  return {"exp_avg", "exp_avg_sq"};
}

std::unique_ptr<SparseOptimizer> make_adam(const OptimizerConfig& config, int64_t rows,
                                           int64_t dim) {
  return std::make_unique<SparseAdam>(config, rows, dim);
}

}  // namespace gradwire::ps
