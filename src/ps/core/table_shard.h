// One parameter server's shard of one table: its rows, its optimizer, the sync-step barrier
// (docs/ps.md). The gRPC service calls it; it knows nothing of RPC.
//
// Rows: the shard holds the rows with id % num_servers == server_index, at local row
// id / num_servers (gradwire/ps/table.h), initialised by initial_rows().
//
// Modes (TableConfig::mode):
//   kAsync: each push is coalesced, scaled (1 / num_trainers for kMean) and applied at once;
//           step() counts the pushes applied to this shard (so Adam's bias correction, which
//           uses it, depends on how pushes spread over servers). finish_step() returns at once.
//   kSync:  pushes for step s (s == step()) are kept; when all num_trainers trainers called
//           finish_step(s), the step's gradients are reduced once (concatenated, coalesced,
//           scaled), the optimizer runs with update count s + 1, step() becomes s + 1 and the
//           waiting finish_step calls return. Lookups before that see the rows of before step s.
//
// Thread model: every member may be called from any thread. One std::shared_mutex guards the
// rows, the optimizer, the step count and the pending gradients: lookup() and snapshot() share
// it, push() and finish_step() take it alone. Input validation and coalescing run before the
// lock is taken. The only wait is finish_step()'s, on a condition variable, which releases the
// lock; nothing else blocks. Errors are thrown on the calling thread and leave the shard
// unchanged.
#pragma once

#include <ATen/ATen.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "gradwire/ps/table.h"
#include "ps/core/coalesce.h"
#include "ps/core/sparse_optimizer.h"

namespace gradwire::ps {

// What finish_step() saw.
struct StepOutcome {
  bool applied = false;  // the awaited step has been applied
  int64_t step = 0;      // the table's step() when the call returned
  // When not applied: the trainers that never finished the awaited step, ascending.
  std::vector<int> missing_trainers;
};

// A consistent deep copy of a shard (its own tensors), for checkpoints and restore().
struct ShardSnapshot {
  TableConfig config;
  int server_index = 0;
  int num_servers = 1;
  int64_t step = 0;
  at::Tensor weights;              // float32 [rows_on_server(...), dim]
  OptimizerState optimizer_state;  // as SparseOptimizer::state(), cloned
};

class TableShard {
 public:
  // A new shard with rows from initial_rows(). InvalidArgument for a config that fails
  // validate() or unless 0 <= server_index < num_servers. Blocking: initialises the rows here.
  TableShard(TableConfig config, int server_index, int num_servers);

  // The shard a snapshot describes (takes its tensors). InvalidArgument naming what disagrees:
  // the config, the shard position, the weights' dtype or shape, the optimizer state's names or
  // shapes, a negative step.
  static std::unique_ptr<TableShard> restore(ShardSnapshot snapshot);

  TableShard(const TableShard&) = delete;
  TableShard& operator=(const TableShard&) = delete;

  const TableConfig& config() const { return config_; }
  int server_index() const { return server_index_; }
  int num_servers() const { return num_servers_; }
  int64_t rows_here() const { return rows_here_; }
  // Updates applied so far (sync: steps; async: pushes).
  int64_t step() const;

  // The rows of global ids (int64, 1-D, owned by this server, any order, duplicates fine): a new
  // float32 tensor [n, dim]. InvalidArgument naming the first bad id: negative, >= num_rows, or
  // owned by another server ("id 17 belongs to server 1 of 2").
  at::Tensor lookup(const at::Tensor& ids) const;

  // Gradients of `trainer` for rows `ids` (as in lookup; duplicates are summed). Validates first
  // (ids int64 1-D, grads float32 [n, dim] and finite, 0 <= trainer < num_trainers) and throws
  // InvalidArgument with the shard unchanged. async: applied now (step ignored). sync: `step`
  // must equal step(), and the trainer must not have finished it yet; kept until the step ends.
  // The shard keeps no reference to the caller's tensors.
  void push(int trainer, int64_t step, const at::Tensor& ids, const at::Tensor& grads);

  // sync: records that `trainer` finished `step` (idempotent); the last of the num_trainers
  // applies the step (see the top). Then blocks until `step` is applied or `deadline` passes
  // (applied = false, missing_trainers = those that did not finish it; calling again later is
  // fine). A step older than step() returns applied = true at once; a newer one is
  // InvalidArgument. async: returns applied = true at once. InvalidArgument for a bad trainer.
  StepOutcome finish_step(int trainer, int64_t step,
                          std::chrono::steady_clock::time_point deadline);

  // A consistent deep copy, taken under the shared lock. Pending sync gradients of the current
  // step are not part of it.
  ShardSnapshot snapshot() const;

 private:
  struct RestoreTag {};
  TableShard(TableConfig config, int server_index, int num_servers, RestoreTag);

  // Validation of the caller's input, without the lock (config_ never changes).
  void check_ids(const at::Tensor& ids, const char* what) const;
  void check_trainer(int trainer, const char* operation) const;
  at::Tensor local_rows(const at::Tensor& ids) const;
  // Scales (kMean) and applies coalesced gradients as update step_ + 1. Requires mutex_ held
  // exclusively.
  void apply_locked(SparseRows rows);
  void reduce_and_apply_locked();

  const TableConfig config_;
  const int server_index_;
  const int num_servers_;
  const int64_t rows_here_;

  mutable std::shared_mutex mutex_;
  std::condition_variable_any step_applied_;  // notified when step_ grows
  // Guarded by mutex_:
  at::Tensor weights_;
  std::unique_ptr<SparseOptimizer> optimizer_;
  int64_t step_ = 0;
  std::vector<SparseRows> pending_;      // sync: coalesced pushes of step_
  std::vector<bool> finished_trainers_;  // sync: who finished step_
};

}  // namespace gradwire::ps
