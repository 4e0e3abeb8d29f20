// The summation role's "optimizer" (sparse_optimizer.h): the rows become the step's reduced
// gradient, which the trainers pull and give to their own optimizer (docs/ps.md "Dense
// parameters").
#include <ATen/ATen.h>

#include "ps/core/sparse_optimizers.h"

namespace gradwire::ps {
namespace {

class AssignRows : public RowOptimizer {
 public:
  AssignRows(int64_t rows, int64_t dim) : RowOptimizer("assign", {}, rows, dim) {}

  void update(at::Tensor& weight_rows, std::vector<at::Tensor>& /*state_rows*/,
              const at::Tensor& grads, int64_t /*step*/) override {
    weight_rows.copy_(grads);
  }
};

}  // namespace

std::unique_ptr<SparseOptimizer> make_assign(const OptimizerConfig& /*config*/, int64_t rows,
                                             int64_t dim) {
  return std::make_unique<AssignRows>(rows, dim);
}

std::vector<std::string> assign_state_names(const OptimizerConfig& /*config*/) { return {}; }

}  // namespace gradwire::ps
