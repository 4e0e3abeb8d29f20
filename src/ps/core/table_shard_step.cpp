// One server's shard of one table (table_shard.h), its steps: admitting attempts, discarding and
// applying steps, the sync barrier (Note [aligned pushes]), bounded staleness, and rewinding to a
// checkpoint.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

#include "gradwire/common/error.h"
#include "ps/core/coalesce.h"
#include "ps/core/table_shard.h"

namespace gradwire::ps {
namespace {

// out = scale(a + b) (b null: scale(a)), element by element; with `check`, false when some
// result is not finite. One loop the compiler vectorises (the check reads exponent bits).
template <typename Scale>
bool add_pass(const float* a, const float* b, float* out, int64_t count, Scale scale, bool check) {
  uint32_t not_finite = 0;
  for (int64_t i = 0; i < count; ++i) {
    const float value = scale(b != nullptr ? a[i] + b[i] : a[i]);
    out[i] = value;
    if (check) {
      uint32_t bits;
      std::memcpy(&bits, &value, sizeof(bits));
      not_finite |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
    }
  }
  return not_finite == 0;
}

// Note [fused reduction]: a dense step's messages are aligned (Note [aligned pushes]), so each is
// reduced in one pass: out = (v_0 + v_1 + ... + v_{n-1}) / divisor, summed in trainer order and
// divided once, as add and div_ would (the same bits; a power-of-two divisor multiplies by its
// exact reciprocal), while checking that every result is finite. Separate add, check and div_
// passes read and wrote the step's gradients three times more (the server's memory bandwidth is
// the trainers' too); the first additions are passes of their own only beyond two trainers.
// Returns false when some result is not finite.
bool reduce_into(const std::vector<const float*>& inputs, float* out, int64_t count, int divisor) {
  const auto reduce = [&](auto scale) {
    const auto same = [](float value) { return value; };
    if (inputs.size() == 1) return add_pass(inputs[0], nullptr, out, count, scale, true);
    // Left to right: ((v_0 + v_1) + v_2) + ...; the last addition scales and checks.
    for (size_t t = 1; t + 1 < inputs.size(); ++t) {
      add_pass(t == 1 ? inputs[0] : out, inputs[t], out, count, same, false);
    }
    return add_pass(inputs.size() == 2 ? inputs[0] : out, inputs.back(), out, count, scale, true);
  };
  if (divisor == 1) return reduce([](float value) { return value; });
  if ((divisor & (divisor - 1)) == 0) {
    const float reciprocal = 1.0f / static_cast<float>(divisor);  // exact for a power of two
    return reduce([reciprocal](float value) { return value * reciprocal; });
  }
  const auto by = static_cast<float>(divisor);
  return reduce([by](float value) { return value / by; });
}

}  // namespace

void TableShard::drop_pending_locked(int trainer) {
  // What was charged, not bytes_of() again: a caller's tensor may have changed its storage since.
  int64_t& bytes = pending_trainer_bytes_[static_cast<size_t>(trainer)];
  pending_[static_cast<size_t>(trainer)].clear();
  pending_bytes_ -= bytes;
  if (budget_) budget_->release(bytes);
  bytes = 0;
  record_pending_locked();
}

void TableShard::clear_pending_locked() {
  for (auto& pushes : pending_) pushes.clear();
  pending_trainer_bytes_.assign(pending_trainer_bytes_.size(), 0);
  if (budget_) budget_->release(pending_bytes_);
  pending_bytes_ = 0;
  record_pending_locked();
}

void TableShard::record_pending_slow() const {
  timeline::counter(pending_counter_, {{"bytes", pending_bytes_}});
}

void TableShard::check_attempt_locked(Attempt attempt, const std::string& caller) const {
  if (attempt.restart < restart_) {
    throw StaleAttemptError(table_prefix(config_) + ": " + caller + " from attempt " +
                            std::to_string(attempt.restart) + " of the job was refused: attempt " +
                            std::to_string(restart_) + " has started (the job was restarted)");
  }
  // Note [attempt limits]: checked before anything changes. Both are >= 0: no overflow.
  if (attempt.restart - restart_ > kMaxAttemptJump) {
    throw InvalidArgument(
        table_prefix(config_) + ": " + caller + " from attempt " + std::to_string(attempt.restart) +
        " of the job was refused: this table is at attempt " + std::to_string(restart_) +
        " and takes a newer one at most " + std::to_string(kMaxAttemptJump) + " above it (up to " +
        std::to_string(restart_ + kMaxAttemptJump) +
        "); nothing was changed. The attempt is the job's restart count "
        "(ClientOptions::attempt, TORCHELASTIC_RESTART_COUNT)");
  }
}

void TableShard::admit_locked(int trainer, Attempt attempt) {
  const auto caller = [trainer] { return "a call of trainer " + std::to_string(trainer); };
  check_trainer(trainer, "a call");  // the count may have changed since the check before the lock
  check_attempt_locked(attempt, caller());
  const bool newer_restart = attempt.restart > restart_;
  uint64_t& newest = incarnations_[static_cast<size_t>(trainer)];
  const uint64_t known = newer_restart ? 0 : newest;  // a newer attempt forgets the processes
  if (attempt.incarnation < known) {
    throw StaleAttemptError(table_prefix(config_) + ": a call of an earlier process of trainer " +
                            std::to_string(trainer) +
                            " was refused: the trainer was restarted and its new process "
                            "redoes step " +
                            std::to_string(step_));
  }
  if (attempt.incarnation > known) {
    // Only a process about to be taken is compared with the clock: one taken before stays taken
    // if this host's clock is set back.
    const uint64_t now = static_cast<uint64_t>(
        std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count()));
    const auto skew = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(kMaxIncarnationSkew).count());
    if (attempt.incarnation > now && attempt.incarnation - now > skew) {
      const std::string seconds = std::to_string((attempt.incarnation - now) / 1000000000u);
      throw InvalidArgument(
          table_prefix(config_) + ": " + caller() + " with incarnation " +
          std::to_string(attempt.incarnation) + " was refused: it is " + seconds +
          " s after this server's clock, more than the " +
          std::to_string(kMaxIncarnationSkew.count()) +
          " s allowed for clocks that disagree; nothing was changed. The incarnation is the "
          "trainer process's start time in ns since the epoch (ClientOptions::incarnation): "
          "synchronise the hosts' clocks");
    }
  }
  if (newer_restart) {
    discard_step_locked("attempt " + std::to_string(attempt.restart) +
                        " of the job has started (the job was restarted) and redoes step " +
                        std::to_string(step_));
    restart_ = attempt.restart;
    incarnations_.assign(incarnations_.size(), 0);
  }
  if (attempt.incarnation > newest) {
    // The trainer was restarted alone: what its earlier process sent for this step goes.
    newest = attempt.incarnation;
    drop_pending_locked(trainer);
    finished_trainers_[trainer] = false;
  }
}

void TableShard::discard_step_locked(std::string reason) {
  clear_pending_locked();
  finished_trainers_.assign(finished_trainers_.size(), false);
  ++discards_;
  discard_reason_ = std::move(reason);
  step_applied_.notify_all();
}

void TableShard::apply_locked(SparseRows rows, bool owned) {
  const int64_t update = step_ + 1;
  timeline::Span span("apply", "ps",
                      {{"table", config_.name},
                       {"step", update},
                       {"rows", rows.ids.numel()},
                       {"bytes", static_cast<int64_t>(rows.values.nbytes())}});
  apply_rows_locked(std::move(rows), update, owned);
  step_ = update;
}

void TableShard::apply_rows_locked(SparseRows rows, int64_t update, bool owned, bool scaled) {
  if (!scaled && config_.reduction == GradientReduction::kMean && num_trainers() > 1) {
    // Unless owned, the values may be the caller's tensor.
    rows.values = owned ? rows.values.div_(num_trainers()) : rows.values.div(num_trainers());
  }
  if (rows.ids.numel() > 0) {
    optimizer_->apply(weights_, local_rows(rows.ids), rows.values, update);
  }
}

// Note [aligned pushes]: the trainers of a dense table push the same messages (the layout is
// computed alike everywhere), so the i-th pending push of every trainer has the same ids, and a
// trainer's pushes never share a row. Then each message's gradients are summed in trainer order
// and applied by itself, without coalescing the whole step (a sort of every row).
bool TableShard::pushes_aligned_locked() const {
  const std::vector<SparseRows>& first = pending_[0];
  for (const auto& pushes : pending_) {
    if (pushes.size() != first.size()) return false;
    for (size_t i = 0; i < first.size(); ++i) {
      const at::Tensor& a = first[i].ids;
      const at::Tensor& b = pushes[i].ids;
      if (a.numel() != b.numel() ||
          std::memcmp(a.data_ptr<int64_t>(), b.data_ptr<int64_t>(),
                      static_cast<size_t>(a.numel()) * sizeof(int64_t)) != 0) {
        return false;
      }
    }
  }
  std::vector<bool> seen(static_cast<size_t>(rows_here_), false);
  for (const SparseRows& rows : first) {
    const int64_t* id = rows.ids.data_ptr<int64_t>();
    for (int64_t i = 0; i < rows.ids.numel(); ++i) {
      const auto row = static_cast<size_t>(id[i] / num_servers_);
      if (seen[row]) return false;
      seen[row] = true;
    }
  }
  return true;
}

void TableShard::reduce_and_apply_locked() {
  // The reduction and the optimizer's update of one step (rows and bytes: what was applied).
  timeline::Span span("apply", "ps", {{"table", config_.name}, {"step", step_ + 1}});
  // In trainer order, so that the sums (and the table's bits) do not depend on who came first;
  // each trainer's pushes in the order of their first id, not of arrival (one trainer's calls run
  // on several handler threads), so that aligned messages line up whatever the timing.
  for (auto& pushes : pending_) {
    std::stable_sort(pushes.begin(), pushes.end(), [](const SparseRows& a, const SparseRows& b) {
      return a.ids.data_ptr<int64_t>()[0] < b.ids.data_ptr<int64_t>()[0];
    });
  }
  std::vector<SparseRows> sums;
  const bool aligned = pushes_aligned_locked();
  bool finite = true;
  if (aligned) {
    // Kept pushes are never written (they may be a trainer's shared memory): each message's mean
    // is a new tensor (Note [fused reduction]).
    const int divisor = config_.reduction == GradientReduction::kMean ? num_trainers() : 1;
    for (size_t i = 0; i < pending_[0].size(); ++i) {
      std::vector<const float*> inputs;
      for (const auto& pushes : pending_) inputs.push_back(pushes[i].values.data_ptr<float>());
      at::Tensor mean = at::empty_like(pending_[0][i].values);
      finite = reduce_into(inputs, mean.data_ptr<float>(), mean.numel(), divisor) && finite;
      sums.push_back(SparseRows{pending_[0][i].ids, mean});
    }
  } else {
    std::vector<at::Tensor> ids;
    std::vector<at::Tensor> values;
    for (const auto& pushes : pending_) {
      for (const SparseRows& rows : pushes) {
        ids.push_back(rows.ids);
        values.push_back(rows.values);
      }
    }
    if (ids.size() == 1) {
      // A kept push is not written, and may be a trainer's shared memory: checked, scaled and
      // applied (below) as a copy (Note [checked is applied] in table_shard.cpp).
      sums.push_back(SparseRows{ids.front(), values.front().clone()});
    }
    if (ids.size() > 1) sums.push_back(coalesce(at::cat(ids), at::cat(values)));
  }
  for (const SparseRows& rows : sums) {
    if (!finite || (!aligned && rows.values.numel() > 0 && !all_finite(rows.values))) {
      const std::string message = "the summed gradients of step " + std::to_string(step_) +
                                  " are not finite (each trainer's were); nothing was applied and "
                                  "the step's pushes were discarded";
      discard_step_locked(table_prefix(config_) + ": " + message);
      throw InvalidArgument(table_prefix(config_) + ": " + message + ". Check the trainers' loss.");
    }
  }
  clear_pending_locked();
  finished_trainers_.assign(finished_trainers_.size(), false);
  // The sums are the shard's own tensors, or with one trainer its push, which is not scaled
  // (below) and which the optimizers only read.
  const int64_t update = step_ + 1;
  if (span.active()) {
    int64_t rows_applied = 0;
    int64_t bytes_applied = 0;
    for (const SparseRows& rows : sums) {
      rows_applied += rows.ids.numel();
      bytes_applied += static_cast<int64_t>(rows.values.nbytes());
    }
    span.arg({"rows", rows_applied});
    span.arg({"bytes", bytes_applied});
    span.arg({"trainers", num_trainers()});
  }
  for (SparseRows& rows : sums) {
    apply_rows_locked(std::move(rows), update, /*owned=*/true, /*scaled=*/aligned);
  }
  step_ = update;
}

StepOutcome TableShard::finish_step(int trainer, int64_t step, Attempt attempt,
                                    const StepWait& wait) {
  check_trainer(trainer, "finish_step");
  std::unique_lock<std::shared_mutex> lock(mutex_);
  if (config_.mode == UpdateMode::kAsync) {
    if (config_.staleness == 0) return StepOutcome{true, false, step_, {}};
    return finish_stale_locked(trainer, step, wait, lock);
  }
  admit_locked(trainer, attempt);
  if (step < step_) return StepOutcome{true, false, step_, {}};
  if (step > step_) {
    throw InvalidArgument(table_prefix(config_) + ": trainer " + std::to_string(trainer) +
                          " finished step " + std::to_string(step) + ", but the table is at step " +
                          std::to_string(step_) + "; finish the steps in order");
  }
  bool all_finished = true;
  for (int t = 0; t < num_trainers(); ++t) {
    all_finished = all_finished && (t == trainer || finished_trainers_[t]);
  }
  if (!all_finished && wait.may_wait && !wait.may_wait()) {
    return StepOutcome{false, false, step_, {}, true};
  }
  finished_trainers_[trainer] = true;
  if (all_finished) {
    reduce_and_apply_locked();
    step_applied_.notify_all();
    return StepOutcome{true, false, step_, {}};
  }
  const uint64_t discards = discards_;
  const uint64_t incarnation = incarnations_[static_cast<size_t>(trainer)];
  // Waiting for the other trainers (the lock is released meanwhile).
  timeline::Span span("step wait", "ps",
                      {{"table", config_.name}, {"step", step}, {"trainer", trainer}});
  for (;;) {
    const auto slice_end =
        std::min(wait.deadline, std::chrono::steady_clock::now() + kStepWaitSlice);
    step_applied_.wait_until(lock, slice_end, [&] {
      return step_ > step || discards_ != discards ||
             incarnations_[static_cast<size_t>(trainer)] != incarnation;
    });
    if (step_ > step) {
      span.arg({"applied", true});
      return StepOutcome{true, false, step_, {}};
    }
    if (discards_ != discards) {
      throw StaleAttemptError(table_prefix(config_) + ": step " + std::to_string(step) +
                              " was discarded while trainer " + std::to_string(trainer) +
                              " waited for it: " + discard_reason_);
    }
    if (incarnations_[static_cast<size_t>(trainer)] != incarnation) {
      throw StaleAttemptError(table_prefix(config_) + ": trainer " + std::to_string(trainer) +
                              " was restarted while its earlier process waited for step " +
                              std::to_string(step));
    }
    if (std::chrono::steady_clock::now() >= wait.deadline) break;
    if (wait.cancelled && wait.cancelled()) return StepOutcome{false, true, step_, {}};
  }
  span.arg({"applied", false});
  StepOutcome outcome{false, false, step_, {}};
  for (int t = 0; t < num_trainers(); ++t) {
    if (!finished_trainers_[t]) outcome.missing_trainers.push_back(t);
  }
  return outcome;
}

StepOutcome TableShard::finish_stale_locked(int trainer, int64_t step, const StepWait& wait,
                                            std::unique_lock<std::shared_mutex>& lock) {
  if (step < 0) {
    throw InvalidArgument(table_prefix(config_) + ": trainer " + std::to_string(trainer) +
                          " finished step " + std::to_string(step) + "; need >= 0");
  }
  check_trainer(trainer, "finish_step");  // the count may have changed since the first check
  const int64_t need = step + 1 - config_.staleness;
  const auto slowest = [&] { return *std::min_element(clocks_.begin(), clocks_.end()); };
  int64_t& clock = clocks_[static_cast<size_t>(trainer)];
  const int64_t before = clock;
  clock = std::max(clock, step + 1);
  if (slowest() >= need) {
    step_applied_.notify_all();
    return StepOutcome{true, false, slowest(), {}};
  }
  if (wait.may_wait && !wait.may_wait()) {
    clock = before;
    return StepOutcome{false, false, slowest(), {}, true};
  }
  step_applied_.notify_all();
  // Waiting for the slowest trainer (bounded staleness).
  timeline::Span span("step wait", "ps",
                      {{"table", config_.name}, {"step", step}, {"trainer", trainer}});
  for (;;) {
    const auto slice_end =
        std::min(wait.deadline, std::chrono::steady_clock::now() + kStepWaitSlice);
    step_applied_.wait_until(lock, slice_end, [&] { return slowest() >= need; });
    if (slowest() >= need) return StepOutcome{true, false, slowest(), {}};
    if (std::chrono::steady_clock::now() >= wait.deadline) break;
    if (wait.cancelled && wait.cancelled()) return StepOutcome{false, true, slowest(), {}};
  }
  StepOutcome outcome{false, false, slowest(), {}};
  for (int t = 0; t < num_trainers(); ++t) {
    if (clocks_[static_cast<size_t>(t)] < need) outcome.missing_trainers.push_back(t);
  }
  return outcome;
}

bool TableShard::admit_at(int trainer, int64_t step, Attempt attempt) {
  check_trainer(trainer, "resume");
  const std::unique_lock<std::shared_mutex> lock(mutex_);
  if (config_.mode == UpdateMode::kAsync) return true;
  admit_locked(trainer, attempt);
  return step_ == step;
}

int64_t TableShard::rewind(ShardSnapshot snapshot, int trainer, Attempt attempt) {
  check_trainer(trainer, "resume");
  // The trainers' count is the membership's (set_trainers()), not part of the rows.
  snapshot.config.num_trainers = config_.num_trainers;
  if (!same_table(snapshot.config, config_) || snapshot.server_index != server_index_ ||
      snapshot.num_servers != num_servers_) {
    throw InvalidArgument(table_prefix(config_) + ": cannot rewind shard " +
                          std::to_string(server_index_) + " of " + std::to_string(num_servers_) +
                          " to a snapshot of " + describe(snapshot.config) + ", shard " +
                          std::to_string(snapshot.server_index) + " of " +
                          std::to_string(snapshot.num_servers));
  }
  // Checked and built before the lock: a restored shard whose state is then taken over.
  const std::unique_ptr<TableShard> restored = restore(std::move(snapshot));
  const std::unique_lock<std::shared_mutex> lock(mutex_);
  if (config_.mode == UpdateMode::kAsync) return step_;
  admit_locked(trainer, attempt);
  if (step_ == restored->step_) return step_;
  discard_step_locked("the table was rewound from step " + std::to_string(step_) + " to step " +
                      std::to_string(restored->step_) + " (a restarted group resumed there)");
  if (rows_kept_) {
    weights_.copy_(restored->weights_);  // the rows stay where trainers read them
  } else {
    weights_ = std::move(restored->weights_);
  }
  optimizer_ = std::move(restored->optimizer_);
  step_ = restored->step_;
  awaiting_values_ = false;
  step_applied_.notify_all();
  return step_;
}

void TableShard::set_trainers(int wanted, Attempt attempt) {
  if (wanted < 1) {
    throw InvalidArgument(table_prefix(config_) + ": " + std::to_string(wanted) +
                          " trainers asked; need >= 1");
  }
  const std::unique_lock<std::shared_mutex> lock(mutex_);
  const int before = num_trainers();
  if (wanted == before) return;
  const std::string change =
      "the trainers changed from " + std::to_string(before) + " to " + std::to_string(wanted);
  check_attempt_locked(attempt, "a change of the trainers to " + std::to_string(wanted));
  if (attempt.restart == restart_ && config_.mode == UpdateMode::kSync) {
    const bool touched = pending_bytes_ > 0 ||
                         std::find(finished_trainers_.begin(), finished_trainers_.end(), true) !=
                             finished_trainers_.end();
    if (touched) {
      throw InvalidArgument(table_prefix(config_) + ": " + change + " was refused: attempt " +
                            std::to_string(restart_) + " already works on step " +
                            std::to_string(step_) +
                            "; a new membership comes with a newer attempt (its generation)");
    }
  }
  discard_step_locked(change + " (attempt " + std::to_string(attempt.restart) +
                      ": a new membership of an elastic job) while step " + std::to_string(step_) +
                      " was in progress");
  restart_ = attempt.restart;
  const auto count = static_cast<size_t>(wanted);
  pending_.assign(count, {});
  pending_trainer_bytes_.assign(count, 0);
  finished_trainers_.assign(count, false);
  incarnations_.assign(count, 0);
  // Async with staleness: every trainer of the new membership starts where the slowest was.
  const int64_t slowest = clocks_.empty() ? 0 : *std::min_element(clocks_.begin(), clocks_.end());
  clocks_.assign(count, slowest);
  num_trainers_.store(wanted, std::memory_order_release);
}

}  // namespace gradwire::ps
