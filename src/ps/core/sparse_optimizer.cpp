// The registry of sparse optimizers and what they share (sparse_optimizer.h).
#include "ps/core/sparse_optimizer.h"

#include <ATen/core/grad_mode.h>

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
    {OptimizerKind::kAssign, make_assign, assign_state_names},
};

const OptimizerEntry& find_entry(OptimizerKind kind) {
  for (const OptimizerEntry& entry : kOptimizers) {
    if (entry.kind == kind) return entry;
  }
  throw InvalidArgument("gradwire: no sparse optimizer of kind " +
                        std::to_string(static_cast<int>(kind)) +
                        "; use sgd, adagrad, adam or assign");
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

RowOptimizer::RowOptimizer(const char* name, std::vector<std::string> state_names, int64_t rows,
                           int64_t dim)
    : name_(name), rows_(rows), dim_(dim) {
  for (std::string& state_name : state_names) {
    state_.emplace_back(std::move(state_name), at::zeros({rows, dim}, at::kFloat));
  }
}

void RowOptimizer::apply(at::Tensor& weights, const at::Tensor& rows, const at::Tensor& grads,
                         int64_t step) {
  GRADWIRE_CHECK(weights.scalar_type() == at::kFloat && weights.dim() == 2);
  GRADWIRE_CHECK(rows.scalar_type() == at::kLong && rows.dim() == 1);
  GRADWIRE_CHECK(grads.scalar_type() == at::kFloat && grads.dim() == 2);
  GRADWIRE_CHECK_EQ(grads.size(0), rows.size(0));
  GRADWIRE_CHECK_EQ(grads.size(1), weights.size(1));
  at::NoGradGuard no_grad;
  const int64_t count = rows.size(0);
  if (count == 0) return;
  // Note [row views] in sparse_optimizers.h.
  const at::Tensor local = rows.contiguous();
  const int64_t* row = local.data_ptr<int64_t>();
  int64_t runs = 1;
  for (int64_t i = 1; i < count; ++i) runs += row[i] == row[i - 1] + 1 ? 0 : 1;
  std::vector<at::Tensor> state_rows;
  if (runs * kMinRunRows <= count) {
    for (int64_t start = 0; start < count;) {
      int64_t length = 1;
      while (start + length < count && row[start + length] == row[start] + length) ++length;
      at::Tensor weight_rows = weights.narrow(0, row[start], length);
      state_rows.clear();
      for (auto& entry : state_) state_rows.push_back(entry.second.narrow(0, row[start], length));
      update(weight_rows, state_rows, grads.narrow(0, start, length), step);
      start += length;
    }
    return;
  }
  at::Tensor weight_rows = weights.index_select(0, local);
  for (auto& entry : state_) state_rows.push_back(entry.second.index_select(0, local));
  update(weight_rows, state_rows, grads, step);
  weights.index_copy_(0, local, weight_rows);
  for (size_t i = 0; i < state_.size(); ++i) state_[i].second.index_copy_(0, local, state_rows[i]);
}

void RowOptimizer::load_state(const OptimizerState& state) {
  std::vector<at::Tensor> found(state_.size());
  for (const auto& [name, tensor] : state) {
    size_t index = 0;
    while (index < state_.size() && state_[index].first != name) ++index;
    if (index == state_.size()) {
      throw InvalidArgument(std::string("gradwire: ") + name_ + " keeps no state named '" + name +
                            "'; the state was written for another optimizer");
    }
    if (!tensor.defined() || tensor.scalar_type() != at::kFloat || tensor.dim() != 2 ||
        tensor.size(0) != rows_ || tensor.size(1) != dim_) {
      throw InvalidArgument(
          std::string("gradwire: ") + name_ + " state '" + name + "' must be float32 [" +
          std::to_string(rows_) + ", " + std::to_string(dim_) + "], got " +
          (tensor.defined() ? std::string(tensor.toString()) + " " + c10::str(tensor.sizes())
                            : std::string("an undefined tensor")));
    }
    found[index] = tensor;
  }
  for (size_t index = 0; index < state_.size(); ++index) {
    if (!found[index].defined()) {
      throw InvalidArgument(std::string("gradwire: ") + name_ + " state '" + state_[index].first +
                            "' is missing");
    }
  }
  for (size_t index = 0; index < state_.size(); ++index) {
    state_[index].second.copy_(found[index]);
  }
}

}  // namespace gradwire::ps
