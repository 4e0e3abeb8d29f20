// The registry of sparse optimizers and what they share (sparse_optimizer.h).
#include "ps/core/sparse_optimizer.h"

#include <string>

#include "gradwire/common/error.h"
#include "ps/core/sparse_optimizers.h"

namespace gradwire::ps {
namespace {

struct OptimizerEntry {
  OptimizerKind kind;
  std::unique_ptr<SparseOptimizer> (*make)(const OptimizerConfig& config, int64_t rows,
                                           int64_t dim);
  std::vector<std::string> (*state_names)(const OptimizerConfig& config);
};

// The registry: one entry per optimizer kind.
constexpr OptimizerEntry kOptimizers[] = {
    {OptimizerKind::kSgd, make_sgd, sgd_state_names},
    {OptimizerKind::kAdagrad, make_adagrad, adagrad_state_names},
    {OptimizerKind::kAdam, make_adam, adam_state_names},
};

const OptimizerEntry& find_entry(OptimizerKind kind) {
  for (const OptimizerEntry& entry : kOptimizers) {
    if (entry.kind == kind) return entry;
  }
  throw InvalidArgument("gradwire: no sparse optimizer of kind " +
                        std::to_string(static_cast<int>(kind)) + "; use sgd, adagrad or adam");
}

}  // namespace

std::unique_ptr<SparseOptimizer> make_sparse_optimizer(const OptimizerConfig& config, int64_t rows,
                                                       int64_t dim) {
  GRADWIRE_CHECK_GE(rows, 0);
  GRADWIRE_CHECK_GE(dim, 1);
  return find_entry(config.kind).make(config, rows, dim);
}

std::vector<std::string> optimizer_state_names(const OptimizerConfig& config) {
  return find_entry(config.kind).state_names(config);
}

void check_apply_arguments(const at::Tensor& weights, const at::Tensor& rows,
                           const at::Tensor& grads) {
  GRADWIRE_CHECK(weights.scalar_type() == at::kFloat && weights.dim() == 2);
  GRADWIRE_CHECK(rows.scalar_type() == at::kLong && rows.dim() == 1);
  GRADWIRE_CHECK(grads.scalar_type() == at::kFloat && grads.dim() == 2);
  GRADWIRE_CHECK_EQ(grads.size(0), rows.size(0));
  GRADWIRE_CHECK_EQ(grads.size(1), weights.size(1));
}

StateTensors::StateTensors(std::vector<std::string> names, int64_t rows, int64_t dim)
    : rows_(rows), dim_(dim) {
  for (std::string& name : names) {
    tensors_.emplace_back(std::move(name), at::zeros({rows, dim}, at::kFloat));
  }
}

at::Tensor& StateTensors::get(size_t index) { return tensors_.at(index).second; }

void StateTensors::load(const OptimizerState& state, const char* optimizer) {
  std::vector<at::Tensor> found(tensors_.size());
  for (const auto& [name, tensor] : state) {
    size_t index = 0;
    while (index < tensors_.size() && tensors_[index].first != name) ++index;
    if (index == tensors_.size()) {
      throw InvalidArgument(std::string("gradwire: ") + optimizer + " keeps no state named '" +
                            name + "'; the state was written for another optimizer");
    }
    if (!tensor.defined() || tensor.scalar_type() != at::kFloat || tensor.dim() != 2 ||
        tensor.size(0) != rows_ || tensor.size(1) != dim_) {
      throw InvalidArgument(
          std::string("gradwire: ") + optimizer + " state '" + name + "' must be float32 [" +
          std::to_string(rows_) + ", " + std::to_string(dim_) + "], got " +
          (tensor.defined() ? std::string(tensor.toString()) + " " + c10::str(tensor.sizes())
                            : std::string("an undefined tensor")));
    }
    found[index] = tensor;
  }
  for (size_t index = 0; index < tensors_.size(); ++index) {
    if (!found[index].defined()) {
      throw InvalidArgument(std::string("gradwire: ") + optimizer + " state '" +
                            tensors_[index].first + "' is missing");
    }
  }
  for (size_t index = 0; index < tensors_.size(); ++index) {
    tensors_[index].second.copy_(found[index]);
  }
}

}  // namespace gradwire::ps
