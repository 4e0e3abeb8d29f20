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
//   kSync:  pushes for step s (s == step()) are kept per trainer; when all num_trainers trainers
//           called finish_step(s), the step's gradients are reduced once (in trainer order, then
//           coalesced and scaled), the optimizer runs with update count s + 1, step() becomes
//           s + 1 and the waiting finish_step calls return. Lookups before that see the rows of
//           before step s.
//
// Attempts (sync; docs/ps.md "Restarts"): every push, finish_step and resume names the job's
// attempt (its restart count) and the trainer's process (its incarnation). The step in progress
// belongs to the newest attempt seen: a call of a newer attempt discards every trainer's pushes
// and finished marks of the step (the group was restarted and redoes it); a newer incarnation of
// one trainer discards that trainer's own (it was restarted alone). Calls of an older attempt or
// incarnation are refused with StaleAttemptError, and waiting ones stop with it, so nothing of an
// abandoned step is ever applied and a redone step is applied exactly once. Note [attempt
// limits]: a newer attempt is taken only up to kMaxAttemptJump above the newest one seen, and a
// newer incarnation only up to kMaxIncarnationSkew after this host's clock; beyond them the call is
// refused with InvalidArgument naming the limit, and nothing changes. Without them one call with
// attempt 2^63 - 1 (or incarnation 2^64 - 1) refused every later call of the table (or trainer)
// as stale until the server restarted, since no larger attempt exists.
//
// Dense tables (TableConfig::kind kDense) start awaiting their values: trainer 0 writes them with
// assign() (the last call says complete), lookups wait for that up to their deadline, and pushes
// are refused until then. Restored shards have their values.
//
// Timeline (docs/timeline.md, category "ps"): each update applied is a span "apply" on the thread
// that applies it (table, step, rows, bytes; a sync step's reduction included), a finish_step()
// that waits for other trainers a span "step wait" (table, step, trainer, applied), and a sync
// shard's pending bytes the counter "pending bytes <table>".
//
// Thread model: every member may be called from any thread. One std::shared_mutex guards the
// rows, the optimizer, the step count, the attempts and the pending gradients: lookup() and
// snapshot() share it, the others take it alone. Input validation and coalescing run before the
// lock is taken. The only wait is finish_step()'s, on a condition variable, which releases the
// lock; nothing else blocks. Errors are thrown on the calling thread and leave the shard
// unchanged.
#pragma once

#include <ATen/ATen.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "gradwire/common/error.h"
#include "gradwire/common/timeline.h"
#include "gradwire/ps/table.h"
#include "ps/core/coalesce.h"
#include "ps/core/sparse_optimizer.h"

namespace gradwire::ps {

// Who sends a push, a step or a resume (see the top).
struct Attempt {
  int64_t restart = 0;       // the job's restart count (TORCHELASTIC_RESTART_COUNT), >= 0
  uint64_t incarnation = 0;  // the trainer's process: a later process of a trainer is larger
};

// Note [attempt limits] (see the top): the most a call's attempt may exceed the newest attempt a
// shard has seen. A fresh shard (a new table, a restarted server) has seen attempt 0, so a job
// restarted up to this many times still reaches it; a hostile caller moves the attempt by at most
// this much per call.
inline constexpr int64_t kMaxAttemptJump = 1024;
// How far after this host's clock a trainer's new incarnation may be (the client's default is its
// process's start time, in ns since the epoch, on its own host's clock): room for hosts' clocks
// that disagree; a trainer can be kept out by a hostile incarnation for at most this long.
inline constexpr std::chrono::seconds kMaxIncarnationSkew{600};

// A call of an attempt or a trainer process that a newer one replaced, or a step discarded while
// the call waited for it (the message says which). The service answers ABORTED.
class StaleAttemptError : public Error {
 public:
  using Error::Error;
};

// A request that a configured limit refuses (the message names the limit, its value, what was
// asked and the flag that raises it); nothing was changed. The service answers RESOURCE_EXHAUSTED.
class ResourceLimitError : public Error {
 public:
  using Error::Error;
};

// A wait given up because the caller went away or the server stops (StepWait::cancelled). The
// service answers CANCELLED.
class CancelledError : public Error {
 public:
  using Error::Error;
};

// Bytes of sync pushes (as bytes_of() counts them) one shard holds for its step in progress, by
// default.
inline constexpr int64_t kDefaultMaxPendingBytes = int64_t{1} << 30;

// Note [pending push bytes] (issue 37, finding 5): what bytes_of() charges a kept sync push beyond
// its tensors' storage: the two TensorImpls and StorageImpls (about 200 + 100 bytes each in
// libtorch 1.13 and 2.x), the allocator's rounding of each buffer (64-byte aligned, plus malloc's
// header) and the push's entry in the pending list. Measured (libtorch 1.13): 200,000 one-id
// pushes of dim 1 into a sync shard grew a fresh process's RSS by about 820 bytes each, 12 of them
// ids and gradients; the demonstration over gRPC, 8 M such pushes, was 697 MiB (about
// 910 bytes each) for 9.6 MB counted. Counting ids and values alone undercounted tiny pushes about
// 76-fold; with 1 KiB a push is charged at least about what it holds.
inline constexpr int64_t kPendingPushOverheadBytes = 1024;

// The bytes of sync pushes held by all the shards of one server together (ServerOptions::
// max_total_pending_bytes): shards charge a push before they keep it and release it when the
// step is applied or discarded (or the shard goes). Thread safe (one atomic).
class PendingBudget {
 public:
  explicit PendingBudget(int64_t limit) : limit_(limit) {}
  PendingBudget(const PendingBudget&) = delete;
  PendingBudget& operator=(const PendingBudget&) = delete;

  int64_t limit() const { return limit_; }
  int64_t held() const { return held_.load(std::memory_order_relaxed); }
  // Adds `bytes` (>= 0) unless the total would exceed limit(); false then, nothing added.
  // `*before` (when given) receives the total seen.
  bool try_charge(int64_t bytes, int64_t* before = nullptr);
  // Gives back `bytes` that try_charge() took.
  void release(int64_t bytes);

 private:
  const int64_t limit_;
  std::atomic<int64_t> held_{0};
};

// What finish_step() saw.
struct StepOutcome {
  bool applied = false;    // the awaited step has been applied
  bool cancelled = false;  // finish_step's `cancelled` said true before it was
  int64_t step = 0;        // the table's step() when the call returned
  // When not applied: the trainers that never finished the awaited step, ascending.
  std::vector<int> missing_trainers;
  bool refused = false;  // finish_step's `may_wait` said false: nothing was recorded
};

// A waiting finish_step() checks its `cancelled` this often.
inline constexpr std::chrono::milliseconds kStepWaitSlice{200};

// How a finish_step() call may wait for the other trainers.
struct StepWait {
  // When it stops waiting (answering applied = false and the missing trainers).
  std::chrono::steady_clock::time_point deadline;
  // Asked every kStepWaitSlice while waiting; true stops the wait (cancelled = true). Empty: never.
  std::function<bool()> cancelled;
  // Asked once, under the shard's lock, when the call is about to wait (never by the call that
  // completes the step); false: refused = true, nothing recorded (the service bounds the Step
  // calls waiting at once with it). Empty: always true.
  std::function<bool()> may_wait;
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

// Shared by table_shard.cpp and table_shard_step.cpp: "gradwire: table 'NAME'", the bytes a
// pending push holds, and whether float32 `values` are all finite.
std::string table_prefix(const TableConfig& config);
// Note [pending push bytes]: the storage bytes of the push's ids and values (a view holds its
// whole storage; one storage shared by both counts once) plus kPendingPushOverheadBytes. A view of
// a trainer's shared memory (SharedRegionCache::view, at::from_blob) has a storage of exactly its
// own bytes: those are charged, not the region it keeps mapped (--max-shared-bytes counts that).
int64_t bytes_of(const SparseRows& rows);
bool all_finite(const at::Tensor& values);

class TableShard {
 public:
  // A new shard with rows from initial_rows(). InvalidArgument for a config that fails
  // validate() or unless 0 <= server_index < num_servers. Blocking: initialises the rows here.
  // `max_pending_bytes` bounds the sync pushes held for the step in progress (see push());
  // `budget`, when given, is the server's, shared by all its shards, which every kept push is
  // charged to as well.
  TableShard(TableConfig config, int server_index, int num_servers,
             int64_t max_pending_bytes = kDefaultMaxPendingBytes,
             std::shared_ptr<PendingBudget> budget = nullptr);

  // The shard a snapshot describes (takes its tensors). InvalidArgument naming what disagrees:
  // the config, the shard position, the weights' dtype or shape, the optimizer state's names or
  // shapes, a negative step.
  static std::unique_ptr<TableShard> restore(ShardSnapshot snapshot,
                                             int64_t max_pending_bytes = kDefaultMaxPendingBytes,
                                             std::shared_ptr<PendingBudget> budget = nullptr);

  // Releases what the shard still holds to its budget.
  ~TableShard();

  TableShard(const TableShard&) = delete;
  TableShard& operator=(const TableShard&) = delete;

  // The config the shard was created (or restored) with; its num_trainers is where the shard
  // began: num_trainers() is the count now (set_trainers()), and current_config() says both.
  const TableConfig& config() const { return config_; }
  int num_trainers() const { return num_trainers_.load(std::memory_order_acquire); }
  TableConfig current_config() const;
  int server_index() const { return server_index_; }
  int num_servers() const { return num_servers_; }
  int64_t rows_here() const { return rows_here_; }
  int64_t max_pending_bytes() const { return max_pending_bytes_; }
  // Updates applied so far (sync: steps; async: pushes).
  int64_t step() const;
  // sync: bytes of the pushes (as kept: duplicates summed; counted by bytes_of()) held for the
  // step in progress, every trainer's; 0 for async tables.
  int64_t pending_bytes() const;

  // The rows of global ids (int64, 1-D, owned by this server, any order, duplicates fine): a new
  // float32 tensor [n, dim]. InvalidArgument naming the first bad id: negative, >= num_rows, or
  // owned by another server ("id 17 belongs to server 1 of 2"). A dense shard awaiting its values
  // waits for them until `values_deadline` (TimeoutError saying it still waits for trainer 0).
  at::Tensor lookup(const at::Tensor& ids,
                    std::chrono::steady_clock::time_point values_deadline = {}) const;
  // Moves the rows into a tensor from `allocate(sizes)` (float32, contiguous: the server's shared
  // memory, where trainers on its host read a sync table's rows after a step) and keeps them
  // there: updates and rewinds write into it from now on. Once; returns the rows.
  at::Tensor keep_rows_in(const std::function<at::Tensor(at::IntArrayRef)>& allocate);
  // The rows keep_rows_in() placed, or an undefined tensor before it was called.
  at::Tensor kept_rows() const;

  // The same written into `out` (float32 [n, dim], contiguous: a trainer's shared memory).
  void lookup_into(const at::Tensor& ids, std::chrono::steady_clock::time_point values_deadline,
                   const at::Tensor& out) const;
  // The same, a dense shard awaiting its values waiting for them as a Step waits for trainers:
  // `values_wait.may_wait` is asked once before it waits (false: ResourceLimitError, nothing
  // done), `cancelled` every kStepWaitSlice (true: CancelledError), until `deadline`
  // (TimeoutError).
  void lookup_into(const at::Tensor& ids, const StepWait& values_wait, const at::Tensor& out) const;

  // Dense shards awaiting their values: writes `rows` (float32 [n, dim], finite) at `ids` (as in
  // lookup); `complete` ends the waiting (lookups answer from now on). Only trainer 0 assigns.
  // InvalidArgument for bad input, another trainer, an embedding table, or a shard that has its
  // values already (assigned or restored) — nothing is changed then.
  void assign(int trainer, const at::Tensor& ids, const at::Tensor& rows, bool complete);
  // Whether a dense shard still waits for assign(..., complete = true).
  bool awaiting_values() const;

  // Gradients of `trainer` for rows `ids` (as in lookup; duplicates are summed). Validates first
  // (ids int64 1-D, grads float32 [n, dim], finite also once duplicates are summed,
  // 0 <= trainer < num_trainers) and throws InvalidArgument with the shard unchanged. async:
  // applied now (step and attempt ignored). sync: `attempt` is admitted (see the top:
  // StaleAttemptError for an old one); `step` must equal step(), and the trainer must not have
  // finished it yet; kept until the step ends. A push that would make the shard hold more than
  // max_pending_bytes() for the step, or the server's budget more than its limit, is refused with
  // ResourceLimitError (after the attempt is admitted, as for every call; nothing of the push is
  // kept). Pushes are counted by bytes_of(); discarded or applied ones release their bytes. The
  // shard keeps no reference to the caller's tensors.
  void push(int trainer, int64_t step, const at::Tensor& ids, const at::Tensor& grads,
            Attempt attempt = {});
  // push() of tensors the caller gives up (the service's freshly decoded ones, or views of a
  // trainer's shared memory): a sync shard keeps them without a copy and never writes them. The
  // caller must not change them until the step is applied or discarded; a trainer that changes
  // shared gradients anyway gets no non-finite value applied: async shards apply a copy, sync
  // shards check the step's sums (Note [checked is applied] in table_shard.cpp). `ids` must be
  // the caller's own (never shared memory): they are checked once and then used to index rows.
  void push_owned(int trainer, int64_t step, at::Tensor ids, at::Tensor grads,
                  Attempt attempt = {});

  // sync: admits `attempt`, records that `trainer` finished `step` (idempotent); the last of the
  // num_trainers applies the step (see the top). Then blocks until `step` is applied,
  // `wait.deadline` passes (applied = false, missing_trainers = those that did not finish it;
  // calling again later is fine) or `wait.cancelled` says true (applied = false, cancelled =
  // true). StaleAttemptError when a newer attempt or incarnation
  // replaced this one, before or while waiting, or the step was discarded meanwhile;
  // InvalidArgument when the reduced gradients of the step are not finite (nothing is applied,
  // the step's pushes are discarded, the other waiters get StaleAttemptError saying so). A step
  // older than step() returns applied = true at once; a newer one is InvalidArgument. async:
  // returns applied = true at once; with staleness K >= 1 it records that `trainer` finished
  // `step` and waits until every trainer finished step - K or later (then applied = true and
  // step = the slowest trainer's finished steps; missing_trainers on the deadline are those
  // behind). InvalidArgument for a bad trainer.
  // `wait.may_wait` false returns refused = true without recording this call's finish.
  StepOutcome finish_step(int trainer, int64_t step, Attempt attempt, const StepWait& wait);
  // The same with only a deadline.
  StepOutcome finish_step(int trainer, int64_t step, std::chrono::steady_clock::time_point deadline,
                          Attempt attempt = {}) {
    return finish_step(trainer, step, attempt, StepWait{deadline, {}, {}});
  }

  // Resuming a restarted group at `step` (docs/ps.md "Restarts"). sync: admits `attempt` and
  // answers whether the table is at `step`; if not, the caller loads the checkpoint of that step
  // and calls rewind(). async: true (async tables are not rewound).
  bool admit_at(int trainer, int64_t step, Attempt attempt);
  // sync: replaces rows, optimizer state and step by the snapshot's (checked as restore() checks
  // it) and discards the step in progress, unless the table is already at snapshot.step (then
  // only `attempt` is admitted: a second trainer resuming the same group changes nothing).
  // Returns step(). StaleAttemptError for an old attempt, InvalidArgument for a snapshot of
  // another table or shard position.
  int64_t rewind(ShardSnapshot snapshot, int trainer, Attempt attempt);

  // An elastic job's new membership (docs/elastic.md "Parameter servers"): from now on the table
  // has `num_trainers` trainers (sync: the barrier's size; kMean: the divisor, async too). A
  // change is taken from a call of the newest attempt (StaleAttemptError for an older one,
  // InvalidArgument beyond Note [attempt limits]); the step in progress is discarded (its pushes
  // came from the old membership: waiting finish_step calls get StaleAttemptError) and the
  // trainers' processes are forgotten. A change within the attempt that holds the step in progress
  // is refused (InvalidArgument) once any trainer pushed or finished it. The same count changes
  // nothing. The caller checks the count against its limits; num_trainers >= 1.
  void set_trainers(int num_trainers, Attempt attempt);

  // A consistent deep copy, taken under the shared lock. Pending sync gradients of the current
  // step are not part of it.
  ShardSnapshot snapshot() const;

 private:
  struct RestoreTag {};
  TableShard(TableConfig config, int server_index, int num_servers, int64_t max_pending_bytes,
             std::shared_ptr<PendingBudget> budget, RestoreTag);

  // Validation of the caller's input, without the lock (config_ never changes; the trainer is
  // checked against num_trainers() again under the lock, where it may have changed).
  void check_ids(const at::Tensor& ids, const char* what) const;
  void check_trainer(int trainer, const char* operation) const;
  // `rows` is float32 [ids.size(0), dim] on the CPU (`what` names it in the error).
  void check_rows(const at::Tensor& ids, const at::Tensor& rows, const char* what) const;
  at::Tensor local_rows(const at::Tensor& ids) const;
  // Admits `attempt` of `trainer` (see the top): StaleAttemptError for a replaced one,
  // InvalidArgument beyond Note [attempt limits], nothing changed by either. Requires mutex_ held
  // exclusively.
  void admit_locked(int trainer, Attempt attempt);
  // The attempt checks of admit_locked() that concern no trainer. Requires mutex_ held.
  void check_attempt_locked(Attempt attempt, const std::string& caller) const;
  // Drops `trainer`'s pushes of the step in progress, releasing their bytes. Requires mutex_ held
  // exclusively.
  void drop_pending_locked(int trainer);
  // Drops every trainer's pushes of the step in progress, releasing their bytes (to the budget
  // too). Requires mutex_ held exclusively.
  void clear_pending_locked();
  // Drops every trainer's pushes and finished marks of the step in progress and wakes the
  // waiters, who throw StaleAttemptError with `reason`. Requires mutex_ held exclusively.
  void discard_step_locked(std::string reason);
  void push_rows(int trainer, int64_t step, const at::Tensor& ids, const at::Tensor& grads,
                 Attempt attempt, bool owned);
  // Scales (kMean) and applies coalesced gradients as update step_ + 1; `owned`: the values are
  // the shard's own and may be scaled in place. Requires mutex_ held exclusively.
  void apply_locked(SparseRows rows, bool owned);
  // The same as update `update` without counting it; `owned`: the values may be scaled in place.
  // `scaled`: the values are the mean already (Note [fused reduction]).
  void apply_rows_locked(SparseRows rows, int64_t update, bool owned, bool scaled = false);
  // With a timeline: the counter "pending bytes <table>" at pending_bytes_ now. Requires mutex_.
  void record_pending_locked() const {
    if (timeline::enabled()) record_pending_slow();
  }
  void record_pending_slow() const;
  // Note [aligned pushes] in table_shard.cpp. Requires mutex_ held exclusively.
  bool pushes_aligned_locked() const;
  void reduce_and_apply_locked();
  // finish_step of an async table with staleness (see finish_step). Requires mutex_ held by
  // `lock`.
  StepOutcome finish_stale_locked(int trainer, int64_t step, const StepWait& wait,
                                  std::unique_lock<std::shared_mutex>& lock);

  const TableConfig config_;
  const std::string pending_counter_;  // "pending bytes <table>": the timeline's counter
  const int server_index_;
  const int num_servers_;
  const int64_t rows_here_;
  const int64_t max_pending_bytes_;
  const std::shared_ptr<PendingBudget> budget_;  // the server's, or nullptr
  // The trainers now (set_trainers()); written under mutex_ held exclusively, read anywhere.
  std::atomic<int> num_trainers_;

  mutable std::shared_mutex mutex_;
  mutable std::condition_variable_any step_applied_;  // notified when step_ grows or values come
  // Guarded by mutex_:
  at::Tensor weights_;
  std::unique_ptr<SparseOptimizer> optimizer_;
  int64_t step_ = 0;
  std::vector<std::vector<SparseRows>> pending_;  // sync: coalesced pushes of step_, by trainer
  int64_t pending_bytes_ = 0;  // sync: bytes_of() the pushes in pending_ (charged to budget_)
  std::vector<int64_t> pending_trainer_bytes_;  // sync: the same, by trainer
  bool rows_kept_ = false;  // keep_rows_in() was called: weights_'s storage never changes
  std::vector<bool> finished_trainers_;  // sync: who finished step_
  std::vector<int64_t> clocks_;          // async with staleness: steps each finished
  bool awaiting_values_ = false;         // dense: values not assigned yet
  int64_t restart_ = 0;                  // sync: the newest attempt seen
  std::vector<uint64_t> incarnations_;   // sync: each trainer's newest process
  uint64_t discards_ = 0;                // sync: discard_step_locked() calls so far
  std::string discard_reason_;           // sync: why the last discard happened
};

}  // namespace gradwire::ps
