// Sparse Adagrad (sparse_optimizer.h): PyTorch's Adagrad (lr_decay 0, initial accumulator 0, no
// weight decay) on the rows touched.
#include <ATen/ATen.h>

#include "ps/core/sparse_optimizers.h"

namespace gradwire::ps {
namespace {

class SparseAdagrad : public RowOptimizer {
 public:
  SparseAdagrad(const OptimizerConfig& config, int64_t rows, int64_t dim)
      : RowOptimizer("adagrad", adagrad_state_names(config), rows, dim),
        lr_(config.lr),
        eps_(config.eps) {}

  void update(at::Tensor& weight_rows, std::vector<at::Tensor>& state_rows, const at::Tensor& grads,
              int64_t /*step*/) override {
    at::Tensor& sum_rows = state_rows[0];
    sum_rows.addcmul_(grads, grads, 1.0);
    const at::Tensor std = sum_rows.sqrt().add_(eps_);
    weight_rows.addcdiv_(grads, std, -lr_);
  }

 private:
  const double lr_;
  const double eps_;
};

}  // namespace

std::vector<std::string> adagrad_state_names(const OptimizerConfig& /*config*/) { return {"sum"}; }

std::unique_ptr<SparseOptimizer> make_adagrad(const OptimizerConfig& config, int64_t rows,
                                              int64_t dim) {
  return std::make_unique<SparseAdagrad>(config, rows, dim);
}

}  // namespace gradwire::ps
