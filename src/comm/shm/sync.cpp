#include "comm/shm/sync.h"

#include <thread>
#include <vector>

#include "comm/core/spin_wait.h"
#include "common/futex.h"
#include "common/process.h"
#include "gradwire/common/error.h"

namespace gradwire::shm {

namespace {
// How long a wait polls before it sleeps on the futex (Note [spin then sleep] in core/spin_wait.h).
constexpr auto kSpinBudget = std::chrono::microseconds(100);
constexpr auto kLivenessPeriod = std::chrono::milliseconds(100);

// Note [shm futex]: a waiter that stops spinning sleeps in FUTEX_WAIT on the wake_sequence of the
// first rank it still waits for; that rank bumps the word after each post and, when the word's
// sleeper count is non-zero, calls FUTEX_WAKE. Not FUTEX_PRIVATE: the word lives in a shared
// mapping and the waiters are other processes. Lost wake-ups cannot happen: the waiter counts
// itself in `sleepers` and reads the word before checking the counter (all seq_cst), and the
// poster stores the counter, bumps the word, then reads `sleepers`; so either the poster sees the
// sleeper and wakes it, or the waiter sees the new word (FUTEX_WAIT returns at once) or counter.
// The system calls are common's (common/futex.h).

// After a post: wakes the ranks sleeping on this rank's word.
void wake_sleepers(RankControl& control) {
  control.wake_sequence.fetch_add(1, std::memory_order_seq_cst);
  if (control.sleepers.load(std::memory_order_seq_cst) != 0) futex_wake_all(control.wake_sequence);
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return "[" + text + "]";
}
}  // namespace

uint64_t op_signature(OpKind kind, int reduce_op, int dtype, int root, uint64_t bytes) {
  const uint64_t code = static_cast<uint64_t>(kind) + static_cast<uint64_t>(reduce_op);
  return (code << 56) | (static_cast<uint64_t>(dtype & 0xff) << 48) |
         (static_cast<uint64_t>(root & 0xff) << 40) | (bytes & ((uint64_t{1} << 40) - 1));
}

std::string describe_signature(uint64_t signature) {
  static const char* const kOps[] = {"sum", "avg", "min", "max"};
  const int code = static_cast<int>(signature >> 56);
  const int dtype = static_cast<int>((signature >> 48) & 0xff);
  const int root = static_cast<int>((signature >> 40) & 0xff);
  const std::string size = " of " + std::to_string(signature & ((uint64_t{1} << 40) - 1)) +
                           " bytes (dtype code " + std::to_string(dtype) + ")";
  if (code >= 1 && code <= 4) return std::string("allreduce(") + kOps[code - 1] + ")" + size;
  if (code >= 5 && code <= 8) return std::string("reduce_scatter(") + kOps[code - 5] + ")" + size;
  if (code == static_cast<int>(OpKind::kBroadcast)) {
    return "broadcast from rank " + std::to_string(root) + size;
  }
  if (code == static_cast<int>(OpKind::kAllgather)) return "allgather" + size;
  if (code == static_cast<int>(OpKind::kBarrier)) return "barrier";
  if (code >= 12 && code <= 15) {
    return std::string("allreduce(") + kOps[code - 12] + ") in place on a shared buffer" + size;
  }
  if (code == static_cast<int>(OpKind::kSharedAlloc)) return "a shared buffer allocation" + size;
  if (code == static_cast<int>(OpKind::kSharedAllocFailed)) {
    return "a shared buffer allocation that failed there" + size;
  }
  return "an unknown collective (code " + std::to_string(code) + ")";
}

uint64_t shared_argument(uint64_t buffer_id, uint64_t byte_offset) {
  return (buffer_id << 40) | (byte_offset & ((uint64_t{1} << 40) - 1));
}

std::string describe_shared_argument(uint64_t argument) {
  return "shared buffer " + std::to_string(argument >> 40) + " from byte " +
         std::to_string(argument & ((uint64_t{1} << 40) - 1));
}

StepSync::StepSync(const Segment& segment, int rank)
    : segment_(segment), rank_(rank), size_(segment.layout().ranks) {
  for (int r = 0; r < size_; ++r) {
    const int64_t pid = segment_.control(r).pid.load(std::memory_order_acquire);
    watchable_.push_back(pid > 0 && !process_gone(pid));
  }
}

void StepSync::begin(std::string what, uint64_t signature,
                     std::chrono::steady_clock::time_point deadline,
                     std::chrono::milliseconds limit, uint64_t argument) {
  what_ = std::move(what);
  waiting_step_.store(0, std::memory_order_relaxed);  // the last operation's wait is over
  signature_ = signature;
  argument_ = argument;
  deadline_ = deadline;
  limit_ = limit;
}

void StepSync::post(uint64_t step) {
  auto& mine = segment_.control(rank_);
  mine.signature[parity(step)].store(signature_, std::memory_order_relaxed);
  mine.argument[parity(step)].store(argument_, std::memory_order_relaxed);
  mine.posted.store(step, std::memory_order_release);
  wake_sleepers(mine);
}

void StepSync::post_reduced(uint64_t step) {
  auto& mine = segment_.control(rank_);
  mine.reduced.store(step, std::memory_order_release);
  wake_sleepers(mine);
}

void StepSync::abort() {
  aborted_.store(true, std::memory_order_seq_cst);
  // Ends a futex sleep of this communicator's waiter now rather than at its next liveness check;
  // the other ranks' waiters see a spurious wake-up and sleep again.
  for (int r = 0; r < size_; ++r) {
    auto& control = segment_.control(r);
    control.wake_sequence.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(control.wake_sequence);
  }
}

// Note [withdrawn rank]: a rank that leaves sets kWithdrawn in both counters, keeping the steps
// they hold. A waiter takes it for arrived at a step it posted before leaving (its data is in
// place and it writes no more), and fails at once for a step it did not. The steps are kept
// because a waiter counts the ranks one by one: a rank may post a step, finish the collective,
// leave, and only then be looked at by a slower waiter of that step. (Counters set to one
// "withdrawn" value lost that step: the slower waiter failed a collective that every rank had
// completed, PeerFailure's survivor in its first allreduce on shm.)
namespace {
constexpr uint64_t kWithdrawn = uint64_t{1} << 63;

// The step a counter holds, without the withdrawn mark.
uint64_t counted_step(uint64_t value) { return value & ~kWithdrawn; }
}  // namespace

void StepSync::withdraw() {
  auto& mine = segment_.control(rank_);
  mine.posted.fetch_or(kWithdrawn, std::memory_order_acq_rel);
  mine.reduced.fetch_or(kWithdrawn, std::memory_order_acq_rel);
  wake_sleepers(mine);
}

void StepSync::wait_posted(uint64_t step) {
  wait_all(&RankControl::posted, step, "post");
  // A rank is at most one step ahead, using the other parity: this step's signatures are stable.
  auto describe = [](uint64_t signature, uint64_t argument) {
    return describe_signature(signature) +
           (argument == 0 ? "" : " (" + describe_shared_argument(argument) + ")");
  };
  for (int r = 0; r < size_; ++r) {
    const auto& theirs = segment_.control(r);
    const uint64_t signature = theirs.signature[parity(step)].load(std::memory_order_relaxed);
    const uint64_t argument = theirs.argument[parity(step)].load(std::memory_order_relaxed);
    if (signature != signature_ || argument != argument_) {
      throw std::runtime_error(
          "shm: collectives differ: rank " + std::to_string(rank_) +
          " of the communicator called " + describe(signature_, argument_) + " while rank " +
          std::to_string(r) + " called " + describe(signature, argument) +
          ". Every rank must issue the same collectives in the same order with the same sizes");
    }
  }
}

void StepSync::wait_reduced(uint64_t step) {
  wait_all(&RankControl::reduced, step, "reduce its slice of");
}

std::string StepSync::describe_wait() const {
  const uint64_t step = waiting_step_.load(std::memory_order_relaxed);
  if (step == 0) return "";
  const bool reduced = waiting_reduced_.load(std::memory_order_relaxed);
  std::vector<int> missing;
  for (int r = 0; r < size_; ++r) {
    const auto& control = segment_.control(r);
    const uint64_t reached = (reduced ? control.reduced : control.posted).load();
    if (counted_step(reached) < step) missing.push_back(r);
  }
  if (missing.empty()) return "";
  return "rank " + std::to_string(rank_) + " was waiting for rank(s) " + ranks_text(missing) +
         " of the communicator to " + (reduced ? "reduce their slice of" : "post") + " step " +
         std::to_string(step);
}

void StepSync::wait_all(std::atomic<uint64_t> RankControl::*counter, uint64_t step,
                        const char* phase) {
  // Ranks are checked in order; a rank that arrived stays arrived (counters only grow).
  int next = 0;
  // What this thread waits for (describe_wait()), kept after the wait until the next operation
  // begins: cleared when a wait that timed out ended, a caller's wait timing out at the same
  // moment read nothing before the operation's work completed (ShmPeerFailure's stalled rank,
  // named "waiting for rank(s) [1]" only in that message).
  waiting_reduced_.store(counter == &RankControl::reduced, std::memory_order_relaxed);
  waiting_step_.store(step, std::memory_order_relaxed);
  auto arrived = [&] {
    while (next < size_) {
      const uint64_t value = (segment_.control(next).*counter).load(std::memory_order_acquire);
      if (counted_step(value) >= step) {
        ++next;
        continue;
      }
      if (value & kWithdrawn) {  // Note [withdrawn rank]
        const int64_t pid = segment_.control(next).pid.load(std::memory_order_relaxed);
        throw PeerGone("shm: " + what_ + ": rank " + std::to_string(next) +
                           " of the communicator (pid " + std::to_string(pid) +
                           ") left it while rank " + std::to_string(rank_) +
                           " waited for it (its communicator was destroyed, e.g. after its part "
                           "of a collective failed elsewhere)",
                       next);
      }
      break;
    }
    return next == size_;
  };
  if (spin_until(arrived, kSpinBudget)) return;
  auto next_liveness = std::chrono::steady_clock::now();
  while (!arrived()) {
    const auto now = std::chrono::steady_clock::now();
    if (aborted_.load(std::memory_order_seq_cst)) {
      throw std::runtime_error("shm: " + what_ + " aborted: the communicator is shutting down");
    }
    std::vector<int> missing;
    if (now >= next_liveness || now >= deadline_) {
      for (int r = next; r < size_; ++r) {
        const uint64_t value = (segment_.control(r).*counter).load(std::memory_order_acquire);
        if (counted_step(value) >= step) continue;
        missing.push_back(r);
        const int64_t pid = segment_.control(r).pid.load(std::memory_order_relaxed);
        if (watchable_[r] && process_gone(pid)) {
          throw PeerGone("shm: " + what_ + ": rank " + std::to_string(r) +
                             " of the communicator (pid " + std::to_string(pid) +
                             ") exited while rank " + std::to_string(rank_) + " waited for it",
                         r);
        }
      }
      next_liveness = now + kLivenessPeriod;
    }
    if (now >= deadline_) {
      throw std::runtime_error("shm: " + what_ + " timed out after " + format_duration(limit_) +
                               " waiting for rank(s) " + ranks_text(missing) +
                               " of the communicator to " + phase + " step " +
                               std::to_string(step) + "; they are alive but did not arrive");
    }
    // Sleep until rank `next` posts, the next liveness check, or the deadline (Note [shm futex]).
    auto& control = segment_.control(next);
    control.sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t sequence = control.wake_sequence.load(std::memory_order_seq_cst);
    if ((control.*counter).load(std::memory_order_seq_cst) < step &&
        !aborted_.load(std::memory_order_seq_cst)) {
      futex_wait(control.wake_sequence, sequence, std::min(next_liveness, deadline_) - now);
    }
    control.sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

}  // namespace gradwire::shm
