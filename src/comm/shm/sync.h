// Step synchronisation over a shm segment's per-rank counters: no locks, each rank writes only its
// own counters; waits poll for 100 us (core/spin_wait.h), then sleep on a futex that the awaited
// rank's next post wakes (Note [shm futex] in shm/sync.cpp), and never outlast the operation's
// deadline. While waiting, the pids of the ranks not yet arrived are checked about
// every 100 ms, so a dead peer ends the wait well within a second.
//
// Protocol (see docs/communicator.md, "shm backend"): every collective runs one or more steps;
// in each step every rank posts (its input for that step is in its slot) and waits until every
// rank posted. Slots alternate by step parity, and a rank posts step s only after it finished
// step s-1, so a slot written in step s was last read in step s-2, which everyone had finished:
// no extra synchronisation is needed before reuse.
//
// Thread safety: one StepSync per communicator, used by its progress thread only (abort() may
// be called from any thread).
#pragma once

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/shm/segment.h"

namespace gradwire::shm {

// A wait ended because a peer's process exited. what() names the rank and its pid.
class PeerGone : public std::runtime_error {
 public:
  PeerGone(const std::string& message, int rank) : std::runtime_error(message), rank_(rank) {}
  int rank() const { return rank_; }

 private:
  int rank_;
};

// What a collective is, as every rank must agree: its kind, dtype, root and size, packed in 64
// bits (kind 8, dtype 8, root mod 256 8, bytes 40) and compared in every step.
enum class OpKind : uint8_t {
  kAllreduce = 1,      // + ReduceOp (sum, avg, min, max)
  kReduceScatter = 5,  // + ReduceOp
  kBroadcast = 9,
  kAllgather = 10,
  kBarrier = 11,
  kSharedAllreduce = 12,    // + ReduceOp: in place on a shared buffer (argument: which, where)
  kSharedAlloc = 16,        // allocating a shared buffer (bytes)
  kSharedAllocFailed = 17,  // posted instead by a rank whose part of the allocation failed
};
uint64_t op_signature(OpKind kind, int reduce_op, int dtype, int root, uint64_t bytes);
// "allreduce(avg) of 4096 bytes of dtype 6", "broadcast from rank 1 of 64 bytes ...".
std::string describe_signature(uint64_t signature);
// The argument of an allreduce in place on a shared buffer: the buffer's number (from 1, below
// 2^24) and the tensor's byte offset in it (below 2^40); "shared buffer 2 from byte 4096".
uint64_t shared_argument(uint64_t buffer_id, uint64_t byte_offset);
std::string describe_shared_argument(uint64_t argument);

class StepSync {
 public:
  // Every rank's pid must be in the segment already (join_segment() returned).
  StepSync(const Segment& segment, int rank);

  // Starts an operation named `what` (for messages) with `signature` (op_signature()) and
  // `argument` (RankControl::argument) that must finish by `deadline`.
  void begin(std::string what, uint64_t signature, std::chrono::steady_clock::time_point deadline,
             std::chrono::milliseconds limit, uint64_t argument = 0);
  // Replaces the signature posted from now on (a rank whose part failed says so to the others).
  void set_signature(uint64_t signature) { signature_ = signature; }
  // The next step number (starts at 1) and the slot parity it uses.
  uint64_t next_step() { return ++step_; }
  static int parity(uint64_t step) { return static_cast<int>(step & 1); }

  void post(uint64_t step);
  void post_reduced(uint64_t step);
  // Block until every rank posted (reduced) `step`. Throws PeerGone when a waited-for rank's
  // process is gone, std::runtime_error "... timed out ..." naming the missing ranks after the
  // deadline, and std::runtime_error when abort() was called. wait_posted also throws
  // std::runtime_error naming the first rank whose collective (signature or argument) differs
  // from this one.
  void wait_posted(uint64_t step);
  void wait_reduced(uint64_t step);

  // Makes current and future waits fail (communicator shutting down); wakes a sleeping wait.
  void abort();
  // Tells the other ranks this one left the communicator for good (it was destroyed, say after
  // its part of a collective failed elsewhere): their waits for it fail at once, naming it,
  // instead of running into the deadline. Call after abort(), once this rank waits no more.
  void withdraw();

  // While a wait is in progress, and after one that failed until the next begin(): "waiting for
  // rank(s) [1] of the communicator to post step 7"; otherwise (every rank arrived, or no wait
  // since begin()) empty. Thread safe (reads counters only); for messages about a stall.
  std::string describe_wait() const;

 private:
  void wait_all(std::atomic<uint64_t> RankControl::*counter, uint64_t step, const char* phase);

  const Segment& segment_;
  int rank_;
  int size_;
  // Per rank: whether its pid was visible when the communicator was built. Ranks in another pid
  // namespace (containers sharing /dev/shm) are never declared dead, only waited out.
  std::vector<bool> watchable_;
  uint64_t step_ = 0;
  std::string what_;
  uint64_t signature_ = 0;
  uint64_t argument_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::milliseconds limit_{0};
  std::atomic<bool> aborted_{false};
  // The operation's last wait, for describe_wait(): its step (0: none since begin()) and whether
  // it waits for `reduced` rather than `posted`.
  std::atomic<uint64_t> waiting_step_{0};
  std::atomic<bool> waiting_reduced_{false};
};

}  // namespace gradwire::shm
