// Busy-waiting before sleeping, for the waits on a collective's critical path (a progress thread
// waiting for the next job, a caller waiting for its work, a rank waiting for its peers).
//
// Note [spin then sleep]: on a virtual machine, waking a thread that sleeps on a futex costs an
// inter-processor interrupt and a scheduler pass, tens of microseconds, more than a whole small
// shm allreduce. So a waiter first polls for `budget`: pause instructions for a few microseconds,
// then sched_yield, which returns at once when nothing else is runnable and otherwise lets the
// threads that share this core run (the compute threads of a training rank, or the thread being
// waited for). Only then does it sleep. A budget of a few tens of microseconds costs nothing next
// to a training iteration and keeps small collectives off the futex path when ranks are in step.
//
// Thread safety: stateless; `ready` is called on the calling thread only.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace gradwire {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

// Polls `ready` until it returns true (then true) or `budget` has passed (then false). Never
// sleeps; yields once the first couple of microseconds have passed.
template <typename Ready>
bool spin_until(Ready&& ready, std::chrono::microseconds budget) {
  constexpr int kPauses = 64;  // about 1-2 microseconds of pause instructions per round
  constexpr int kPauseRounds = 2;
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0;; ++round) {
    if (ready()) return true;
    if (round < kPauseRounds) {
      for (int i = 0; i < kPauses; ++i) cpu_relax();
    } else {
      std::this_thread::yield();
    }
    if (std::chrono::steady_clock::now() - start >= budget) return ready();
  }
}

}  // namespace gradwire
