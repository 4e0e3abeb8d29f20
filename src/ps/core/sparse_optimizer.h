// Sparse optimizers of parameter-server tables: an update touches only the rows given and their
// state, so a table split over any number of servers trains exactly like one (docs/ps.md).
//
// Every optimizer follows PyTorch's (torch::optim, libtorch 1.13) arithmetic in float32, restricted
// to the rows touched, so a dense table whose every row is touched at every step trains exactly
// like torch::optim on a dense parameter:
//   SGD:     momentum 0:  w -= lr * g
//            momentum m:  buf = m * buf + g; w -= lr * buf. buf starts at zero, so the first
//                         touch gives buf = g, as PyTorch's first step does (dampening 0).
//   Adagrad: sum += g * g; w -= lr * g / (sqrt(sum) + eps)   (lr_decay 0, initial sum 0).
//   Adam:    m = b1 * m + (1 - b1) * g; v = b2 * v + (1 - b2) * g * g;
//            w -= (lr / (1 - b1^step)) * m / (sqrt(v) / sqrt(1 - b2^step) + eps),
//            `step` being the table's update count (SparseAdam's semantics for the rows touched).
//   Assign:  w = g (the summation role of dense tables: trainers run their own optimizer on it).
//
// Extension point: an optimizer is a SparseOptimizer and one entry of the registry in
// sparse_optimizer.cpp (kind -> factory).
//
// Thread safety: none; the owner (TableShard) serialises calls.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gradwire/ps/table.h"

namespace gradwire::ps {

// Named state tensors of an optimizer, in a fixed order ("momentum_buffer", "sum", "exp_avg"...).
using OptimizerState = std::vector<std::pair<std::string, at::Tensor>>;

class SparseOptimizer {
 public:
  virtual ~SparseOptimizer() = default;

  // Updates `weights` (the shard's float32 [rows, dim] tensor) in place at local row indices
  // `rows` (int64, 1-D, unique, in range) with `grads` (float32 [rows.numel(), dim]). `step` is
  // the 1-based count of this update of the table. Only those rows and their state change.
  // Preconditions are checked with GRADWIRE_CHECK (the caller validated the user's input).
  virtual void apply(at::Tensor& weights, const at::Tensor& rows, const at::Tensor& grads,
                     int64_t step) = 0;

  // The state tensors, each float32 [rows, dim], sharing storage with the optimizer's own (clone
  // them to keep a copy). Empty for SGD without momentum.
  virtual OptimizerState state() const = 0;

  // Copies `state` in. InvalidArgument naming the tensor for a missing or unknown name, a wrong
  // dtype or shape; the optimizer is unchanged then.
  virtual void load_state(const OptimizerState& state) = 0;
};

// The optimizer of `config` for a shard of `rows` x `dim`, its state zero. InvalidArgument for an
// unknown kind.
std::unique_ptr<SparseOptimizer> make_sparse_optimizer(const OptimizerConfig& config, int64_t rows,
                                                       int64_t dim);

// Names of the state tensors make_sparse_optimizer(config, ...) keeps, in state() order.
std::vector<std::string> optimizer_state_names(const OptimizerConfig& config);

}  // namespace gradwire::ps
