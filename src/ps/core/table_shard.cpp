// One server's shard of one table (table_shard.h): construction, checks, lookups, assignment,
// pushes and snapshots. The steps (the sync barrier, attempts, bounded staleness, applying and
// rewinding) are in table_shard_step.cpp.
#include "ps/core/table_shard.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <string>

#include "gradwire/common/error.h"
#include "ps/core/initializer.h"

namespace gradwire::ps {

std::string table_prefix(const TableConfig& config) {
  return "gradwire: table '" + config.name + "'";
}

namespace {

void check_position(const TableConfig& config, int server_index, int num_servers) {
  if (num_servers < 1 || server_index < 0 || server_index >= num_servers) {
    throw InvalidArgument(table_prefix(config) + ": server_index " + std::to_string(server_index) +
                          " of num_servers " + std::to_string(num_servers) +
                          " names no server; need 0 <= server_index < num_servers");
  }
}

// Note [raw loops]: requests carry a few ids and rows each (a batch's share of one server), so
// per-call cost is dominated by fixed overheads; the checks, the row gathers and the coalescing
// below loop over the data directly instead of dispatching a dozen small ATen operations.

// Position of the first id that is negative, >= num_rows or not owned by `server_index`; -1 if
// none. `ids` is contiguous int64.
int64_t first_bad_id(const at::Tensor& ids, int64_t num_rows, int server_index, int num_servers) {
  const int64_t* data = ids.data_ptr<int64_t>();
  const int64_t count = ids.numel();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t id = data[i];
    if (id < 0 || id >= num_rows || id % num_servers != server_index) return i;
  }
  return -1;
}

// True when the ids are strictly increasing (so unique): pushes from the client arrive coalesced
// and sorted, and need no coalescing here.
bool strictly_increasing(const at::Tensor& ids) {
  const int64_t* data = ids.data_ptr<int64_t>();
  for (int64_t i = 1; i < ids.numel(); ++i) {
    if (data[i] <= data[i - 1]) return false;
  }
  return true;
}

}  // namespace

int64_t bytes_of(const SparseRows& rows) {
  // Note [pending push bytes]: what the push keeps alive, not what it shows: a view (a coalesced
  // push's ids may be a prefix of a larger buffer) holds its whole storage.
  const auto storage_bytes = [](const at::Tensor& tensor) -> int64_t {
    return tensor.defined() && tensor.has_storage()
               ? static_cast<int64_t>(tensor.storage().nbytes())
               : 0;
  };
  int64_t bytes = kPendingPushOverheadBytes + storage_bytes(rows.ids);
  if (!rows.values.defined() || !rows.ids.defined() || !rows.values.has_storage() ||
      !rows.ids.has_storage() || !rows.values.storage().is_alias_of(rows.ids.storage())) {
    bytes += storage_bytes(rows.values);
  }
  return bytes;
}

bool PendingBudget::try_charge(int64_t bytes, int64_t* before) {
  int64_t held = held_.load(std::memory_order_relaxed);
  do {
    if (before != nullptr) *before = held;
    if (bytes > limit_ - std::min(held, limit_)) return false;
  } while (!held_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
  return true;
}

void PendingBudget::release(int64_t bytes) { held_.fetch_sub(bytes, std::memory_order_relaxed); }

bool all_finite(const at::Tensor& values) {
  // By the exponent bits (all ones: infinity or NaN), a loop the compiler vectorises: pushes of
  // dense tables are tens of MiB, and std::isfinite element by element ran at a third of the
  // memory's speed.
  GRADWIRE_CHECK(values.scalar_type() == at::kFloat && values.is_contiguous());
  const auto* data = static_cast<const uint32_t*>(values.data_ptr());
  const int64_t count = values.numel();
  constexpr int64_t kChunk = 4096;  // stop early on a bad chunk, vectorised within one
  for (int64_t start = 0; start < count; start += kChunk) {
    const int64_t end = std::min(count, start + kChunk);
    uint32_t not_finite = 0;
    for (int64_t i = start; i < end; ++i) {
      not_finite |= static_cast<uint32_t>((data[i] & 0x7f800000u) == 0x7f800000u);
    }
    if (not_finite != 0) return false;
  }
  return true;
}

TableShard::TableShard(TableConfig config, int server_index, int num_servers,
                       int64_t max_pending_bytes, std::shared_ptr<PendingBudget> budget, RestoreTag)
    : config_((validate(config), check_position(config, server_index, num_servers), config)),
      pending_counter_("pending bytes " + config_.name),
      server_index_(server_index),
      num_servers_(num_servers),
      rows_here_(rows_on_server(config_.num_rows, server_index, num_servers)),
      max_pending_bytes_(max_pending_bytes),
      budget_(std::move(budget)),
      num_trainers_(config_.num_trainers),
      pending_(static_cast<size_t>(config_.num_trainers)),
      pending_trainer_bytes_(static_cast<size_t>(config_.num_trainers), 0),
      finished_trainers_(config_.num_trainers, false),
      clocks_(static_cast<size_t>(config_.num_trainers), 0),
      incarnations_(static_cast<size_t>(config_.num_trainers), 0) {}

TableShard::TableShard(TableConfig config, int server_index, int num_servers,
                       int64_t max_pending_bytes, std::shared_ptr<PendingBudget> budget)
    : TableShard(std::move(config), server_index, num_servers, max_pending_bytes, std::move(budget),
                 RestoreTag{}) {
  // Global ids of the local rows: server_index, server_index + S, ...
  const at::Tensor ids =
      at::arange(0, rows_here_, at::kLong).mul_(num_servers_).add_(server_index_);
  weights_ = initial_rows(config_.initializer, ids, config_.dim);
  optimizer_ = make_sparse_optimizer(config_.optimizer, rows_here_, config_.dim);
  awaiting_values_ = config_.kind == TableKind::kDense;
}

TableShard::~TableShard() {
  if (budget_ && pending_bytes_ > 0) budget_->release(pending_bytes_);
}

std::unique_ptr<TableShard> TableShard::restore(ShardSnapshot snapshot, int64_t max_pending_bytes,
                                                std::shared_ptr<PendingBudget> budget) {
  std::unique_ptr<TableShard> shard(new TableShard(snapshot.config, snapshot.server_index,
                                                   snapshot.num_servers, max_pending_bytes,
                                                   std::move(budget), RestoreTag{}));
  const at::Tensor& weights = snapshot.weights;
  if (!weights.defined() || weights.scalar_type() != at::kFloat || weights.dim() != 2 ||
      weights.size(0) != shard->rows_here_ || weights.size(1) != shard->config_.dim) {
    throw InvalidArgument(
        table_prefix(shard->config_) + ": a snapshot of shard " +
        std::to_string(shard->server_index_) + " of " + std::to_string(shard->num_servers_) +
        " needs weights of float32 [" + std::to_string(shard->rows_here_) + ", " +
        std::to_string(shard->config_.dim) + "], got " +
        (weights.defined() ? std::string(weights.toString()) + " " + c10::str(weights.sizes())
                           : std::string("none")));
  }
  if (snapshot.step < 0) {
    throw InvalidArgument(table_prefix(shard->config_) + ": a snapshot's step is " +
                          std::to_string(snapshot.step) + "; need >= 0");
  }
  shard->optimizer_ =
      make_sparse_optimizer(shard->config_.optimizer, shard->rows_here_, shard->config_.dim);
  shard->optimizer_->load_state(snapshot.optimizer_state);
  shard->weights_ = weights.contiguous();
  shard->step_ = snapshot.step;
  return shard;
}

at::Tensor TableShard::keep_rows_in(const std::function<at::Tensor(at::IntArrayRef)>& allocate) {
  const std::unique_lock<std::shared_mutex> lock(mutex_);
  if (!rows_kept_) {
    at::Tensor kept = allocate(weights_.sizes());
    GRADWIRE_CHECK(kept.scalar_type() == at::kFloat && kept.is_contiguous() &&
                   kept.sizes() == weights_.sizes());
    kept.copy_(weights_);
    weights_ = kept;
    rows_kept_ = true;
  }
  return weights_;
}

at::Tensor TableShard::kept_rows() const {
  const std::shared_lock<std::shared_mutex> lock(mutex_);
  return rows_kept_ ? weights_ : at::Tensor();
}

int64_t TableShard::step() const {
  const std::shared_lock<std::shared_mutex> lock(mutex_);
  return step_;
}

int64_t TableShard::pending_bytes() const {
  const std::shared_lock<std::shared_mutex> lock(mutex_);
  return pending_bytes_;
}

void TableShard::check_ids(const at::Tensor& ids, const char* what) const {
  if (!ids.defined() || ids.scalar_type() != at::kLong || ids.dim() != 1 ||
      !ids.device().is_cpu()) {
    throw InvalidArgument(table_prefix(config_) + ": " + what +
                          " ids must be an int64 1-D CPU tensor, got " +
                          (ids.defined() ? std::string(ids.toString()) + " " + c10::str(ids.sizes())
                                         : std::string("none")));
  }
  if (ids.numel() == 0) return;
  const at::Tensor dense = ids.contiguous();
  const int64_t position = first_bad_id(dense, config_.num_rows, server_index_, num_servers_);
  if (position < 0) return;
  const int64_t id = dense.data_ptr<int64_t>()[position];
  std::string problem;
  if (id < 0) {
    problem = "is negative";
  } else if (id >= config_.num_rows) {
    problem = "is out of range: the table has " + std::to_string(config_.num_rows) +
              " rows (ids 0.." + std::to_string(config_.num_rows - 1) + ")";
  } else {
    problem = "belongs to server " + std::to_string(owner_of(id, num_servers_)) + " of " +
              std::to_string(num_servers_) + ", not to this server " +
              std::to_string(server_index_) + " (rows are sharded by id % num_servers)";
  }
  throw InvalidArgument(table_prefix(config_) + ": " + what + " id " + std::to_string(id) + " " +
                        problem + "; it is at position " + std::to_string(position) +
                        " of the request, and nothing was changed");
}

void TableShard::check_trainer(int trainer, const char* operation) const {
  const int count = num_trainers();
  if (trainer < 0 || trainer >= count) {
    throw InvalidArgument(table_prefix(config_) + ": " + operation + " from trainer " +
                          std::to_string(trainer) + ", but the table has " + std::to_string(count) +
                          " trainer(s) (0.." + std::to_string(count - 1) + ")");
  }
}

TableConfig TableShard::current_config() const {
  TableConfig config = config_;
  config.num_trainers = num_trainers();
  return config;
}

at::Tensor TableShard::local_rows(const at::Tensor& ids) const {
  if (num_servers_ == 1) return ids;
  const at::Tensor dense = ids.contiguous();
  at::Tensor rows = at::empty_like(dense);
  const int64_t* from = dense.data_ptr<int64_t>();
  int64_t* to = rows.data_ptr<int64_t>();
  for (int64_t i = 0; i < dense.numel(); ++i) to[i] = from[i] / num_servers_;  // ids are >= 0
  return rows;
}

at::Tensor TableShard::lookup(const at::Tensor& ids,
                              std::chrono::steady_clock::time_point values_deadline) const {
  at::Tensor out = at::empty({ids.dim() == 1 ? ids.numel() : 0, config_.dim}, at::kFloat);
  lookup_into(ids, values_deadline, out);
  return out;
}

void TableShard::lookup_into(const at::Tensor& ids,
                             std::chrono::steady_clock::time_point values_deadline,
                             const at::Tensor& out) const {
  lookup_into(ids, StepWait{values_deadline, {}, {}}, out);
}

void TableShard::lookup_into(const at::Tensor& ids, const StepWait& values_wait,
                             const at::Tensor& out) const {
  check_ids(ids, "lookup");
  const at::Tensor dense = ids.contiguous();
  const int64_t count = dense.numel();
  const int64_t dim = config_.dim;
  GRADWIRE_CHECK(out.scalar_type() == at::kFloat && out.is_contiguous() && out.dim() == 2 &&
                 out.size(0) == count && out.size(1) == dim);
  const int64_t* id = dense.data_ptr<int64_t>();
  float* to = out.data_ptr<float>();
  std::shared_lock<std::shared_mutex> lock(mutex_);
  if (awaiting_values_ && values_wait.may_wait && !values_wait.may_wait()) {
    throw ResourceLimitError(
        table_prefix(config_) +
        ": a lookup before the table has its values would wait for them, and this server's "
        "max_waiting_steps calls wait already; nothing was done. Call again later, or raise "
        "--max-waiting-steps (ServerOptions::max_waiting_steps)");
  }
  while (awaiting_values_) {
    if (values_wait.cancelled && values_wait.cancelled()) {
      throw CancelledError(table_prefix(config_) +
                           ": a lookup waiting for the table's values was cancelled (the caller "
                           "went away or the server is shutting down)");
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= values_wait.deadline) {
      throw TimeoutError(table_prefix(config_) +
                         ": lookup before the table has its values: this server still waits for "
                         "trainer 0 to assign them (Client::assign; DenseModel does it when it "
                         "starts)");
    }
    step_applied_.wait_until(lock, std::min(values_wait.deadline, now + kStepWaitSlice));
  }
  GRADWIRE_CHECK(weights_.is_contiguous());
  const float* rows = weights_.data_ptr<float>();
  // Runs of consecutive local rows (a dense pull) are one copy each.
  for (int64_t i = 0; i < count;) {
    const int64_t local = id[i] / num_servers_;
    int64_t run = 1;
    while (i + run < count && id[i + run] / num_servers_ == local + run) ++run;
    std::memcpy(to + i * dim, rows + local * dim, static_cast<size_t>(run * dim) * sizeof(float));
    i += run;
  }
}

void TableShard::check_rows(const at::Tensor& ids, const at::Tensor& rows, const char* what) const {
  if (!rows.defined() || rows.scalar_type() != at::kFloat || rows.dim() != 2 ||
      rows.size(0) != ids.size(0) || rows.size(1) != config_.dim || !rows.device().is_cpu()) {
    throw InvalidArgument(table_prefix(config_) + ": " + what + " must be float32 [" +
                          std::to_string(ids.size(0)) + ", " + std::to_string(config_.dim) +
                          "] on the CPU for " + std::to_string(ids.size(0)) + " ids, got " +
                          (rows.defined()
                               ? std::string(rows.toString()) + " " + c10::str(rows.sizes())
                               : std::string("none")) +
                          "; nothing was changed");
  }
}

bool TableShard::awaiting_values() const {
  const std::shared_lock<std::shared_mutex> lock(mutex_);
  return awaiting_values_;
}

void TableShard::assign(int trainer, const at::Tensor& ids, const at::Tensor& rows, bool complete) {
  check_trainer(trainer, "assign");
  if (trainer != 0) {
    throw InvalidArgument(table_prefix(config_) + ": assign from trainer " +
                          std::to_string(trainer) +
                          "; only trainer 0 assigns a dense table's "
                          "values, and nothing was changed");
  }
  check_ids(ids, "assign");
  check_rows(ids, rows, "assign rows");
  // A copy (Note [checked is applied]): `rows` may be a view of trainer 0's shared memory, and
  // what is checked must be what is written.
  const at::Tensor values = rows.clone(at::MemoryFormat::Contiguous);
  if (values.numel() > 0 && !all_finite(values)) {
    throw InvalidArgument(table_prefix(config_) +
                          ": assign rows are not finite (NaN or infinity); nothing was changed");
  }
  const std::unique_lock<std::shared_mutex> lock(mutex_);
  if (!awaiting_values_) {
    throw InvalidArgument(table_prefix(config_) + ": assign refused: " +
                          (config_.kind != TableKind::kDense
                               ? std::string("only dense tables are assigned")
                               : std::string("this shard has its values already (assigned or "
                                             "restored from a checkpoint)")) +
                          "; nothing was changed");
  }
  if (ids.numel() > 0) weights_.index_copy_(0, local_rows(ids.contiguous()), values);
  if (complete) {
    awaiting_values_ = false;
    step_applied_.notify_all();
  }
}

void TableShard::push(int trainer, int64_t step, const at::Tensor& ids, const at::Tensor& grads,
                      Attempt attempt) {
  push_rows(trainer, step, ids, grads, attempt, /*owned=*/false);
}

void TableShard::push_owned(int trainer, int64_t step, at::Tensor ids, at::Tensor grads,
                            Attempt attempt) {
  push_rows(trainer, step, ids, grads, attempt, /*owned=*/true);
}

void TableShard::push_rows(int trainer, int64_t step, const at::Tensor& ids,
                           const at::Tensor& grads, Attempt attempt, bool owned) {
  check_trainer(trainer, "push");
  check_ids(ids, "push");
  check_rows(ids, grads, "push grads");
  const at::Tensor dense_grads = grads.contiguous();
  const at::Tensor dense_ids = ids.contiguous();
  // Sorted unique ids (what the client sends) need no coalescing. Async applies them at once and
  // keeps nothing; sync keeps copies.
  const bool coalesced = strictly_increasing(dense_ids);
  const bool keep = config_.mode == UpdateMode::kSync && !owned;
  // Note [checked is applied]: owned gradients may be a view of a trainer's shared memory, which
  // it can rewrite at any time, so an async shard checks and applies a copy of its own (checking
  // the view and letting the optimizer read it again let a racing write put a NaN past the
  // check). A sync shard keeps the view and checks the step's sums, its own tensors, before it
  // applies them (reduce_and_apply_locked).
  const bool copy_values = config_.mode == UpdateMode::kAsync && owned;
  SparseRows rows = !coalesced    ? coalesce(dense_ids, dense_grads)
                    : keep        ? SparseRows{dense_ids.clone(), dense_grads.clone()}
                    : copy_values ? SparseRows{dense_ids, dense_grads.clone()}
                                  : SparseRows{dense_ids, dense_grads};
  // Checked once duplicates are summed: finite gradients of one id can add up to infinity.
  if (rows.values.numel() > 0 && !all_finite(rows.values)) {
    throw InvalidArgument(table_prefix(config_) + ": push from trainer " + std::to_string(trainer) +
                          " has gradients that are not finite (NaN or infinity" +
                          (coalesced ? std::string() : ", once duplicate ids are summed") +
                          "); nothing was changed. Check the trainer's loss.");
  }
  const std::unique_lock<std::shared_mutex> lock(mutex_);
  if (awaiting_values_) {
    throw InvalidArgument(table_prefix(config_) + ": push from trainer " + std::to_string(trainer) +
                          " before the table has its values (trainer 0 assigns them first); "
                          "nothing was changed");
  }
  if (config_.mode == UpdateMode::kAsync) {
    apply_locked(std::move(rows), /*owned=*/!coalesced || copy_values);
    return;
  }
  admit_locked(trainer, attempt);
  if (step != step_) {
    throw InvalidArgument(table_prefix(config_) + ": push for step " + std::to_string(step) +
                          " from trainer " + std::to_string(trainer) +
                          ", but the table is at step " + std::to_string(step_) +
                          "; push only for the current step");
  }
  if (finished_trainers_[trainer]) {
    throw InvalidArgument(table_prefix(config_) + ": trainer " + std::to_string(trainer) +
                          " pushed for step " + std::to_string(step) +
                          " after finishing it; push before finish_step");
  }
  if (rows.ids.numel() == 0) return;
  // Note [pending push bytes]: the push's tensors and kPendingPushOverheadBytes.
  const int64_t bytes = bytes_of(rows);
  const auto refused = [&] {
    return table_prefix(config_) + ": push of " + std::to_string(bytes) +
           " bytes (ids, gradients and " + std::to_string(kPendingPushOverheadBytes) +
           " bytes of bookkeeping) from trainer " + std::to_string(trainer) + " for step " +
           std::to_string(step) + " refused: ";
  };
  if (bytes > max_pending_bytes_ - pending_bytes_) {
    throw ResourceLimitError(
        refused() + "the step's pushes would hold " + std::to_string(pending_bytes_) + " + " +
        std::to_string(bytes) + " bytes on this server, above its max_pending_bytes " +
        std::to_string(max_pending_bytes_) +
        "; nothing was changed. Push fewer, larger messages per step, use more servers, or raise "
        "--max-pending-bytes (ServerOptions::max_pending_bytes)");
  }
  int64_t held = 0;
  if (budget_ && !budget_->try_charge(bytes, &held)) {
    throw ResourceLimitError(
        refused() + "the sync pushes of all tables on this server would hold " +
        std::to_string(held) + " + " + std::to_string(bytes) +
        " bytes, above its max_total_pending_bytes " + std::to_string(budget_->limit()) +
        "; nothing was changed. Push fewer, larger messages per step, use more servers, or raise "
        "--max-total-pending-bytes (ServerOptions::max_total_pending_bytes)");
  }
  try {
    pending_[static_cast<size_t>(trainer)].push_back(std::move(rows));
  } catch (...) {
    if (budget_) budget_->release(bytes);
    throw;
  }
  pending_bytes_ += bytes;
  pending_trainer_bytes_[static_cast<size_t>(trainer)] += bytes;
  record_pending_locked();
}

ShardSnapshot TableShard::snapshot() const {
  const std::shared_lock<std::shared_mutex> lock(mutex_);
  ShardSnapshot snapshot;
  snapshot.config = current_config();
  snapshot.server_index = server_index_;
  snapshot.num_servers = num_servers_;
  snapshot.step = step_;
  snapshot.weights = weights_.clone();
  for (const auto& [name, tensor] : optimizer_->state()) {
    snapshot.optimizer_state.emplace_back(name, tensor.clone());
  }
  return snapshot;
}

}  // namespace gradwire::ps
