#include "common/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>
#include <thread>

namespace gradwire {

static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words are plain words");

namespace {

timespec to_timespec(std::chrono::nanoseconds span) {
  timespec time{};
  time.tv_sec = static_cast<time_t>(span.count() / 1000000000);
  time.tv_nsec = static_cast<long>(span.count() % 1000000000);
  return time;
}

// Sleeps one poll slice (at most `limit`) unless a word already differs; the fallback of
// futex_wait_any.
bool poll_any(const std::vector<FutexWaiter>& waiters, std::chrono::nanoseconds limit) {
  for (const FutexWaiter& waiter : waiters) {
    if (waiter.word->load(std::memory_order_acquire) != waiter.expected) return true;
  }
  if (limit <= kFutexPollSlice) {
    std::this_thread::sleep_for(limit);
    return false;
  }
  std::this_thread::sleep_for(kFutexPollSlice);
  return true;
}

}  // namespace

bool futex_wait(std::atomic<uint32_t>& word, uint32_t expected, std::chrono::nanoseconds limit) {
  if (limit.count() <= 0) return false;
  timespec timeout = to_timespec(limit);
  const long rc = ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, expected,
                            &timeout, nullptr, 0);
  return !(rc != 0 && errno == ETIMEDOUT);
}


bool futex_wait_any(const std::vector<FutexWaiter>& waiters, std::chrono::nanoseconds limit) {
  if (limit.count() <= 0) return false;
  if (waiters.size() == 1) return futex_wait(*waiters[0].word, waiters[0].expected, limit);
#if defined(SYS_futex_waitv) && defined(FUTEX_32)
  static std::atomic<bool> unsupported{false};
  if (waiters.empty() || waiters.size() > kFutexWaitAnyMax || unsupported.load()) {
    return poll_any(waiters, limit);
  }
  std::vector<futex_waitv> words(waiters.size());
  for (size_t i = 0; i < waiters.size(); ++i) {
    words[i].val = waiters[i].expected;
    words[i].uaddr = reinterpret_cast<uintptr_t>(waiters[i].word);
    words[i].flags = FUTEX_32;
  }
  // futex_waitv takes an absolute time on the clock it is told.
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const auto until = std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec) + limit;
  timespec deadline = to_timespec(until);
  const long rc = ::syscall(SYS_futex_waitv, words.data(), static_cast<unsigned>(words.size()), 0,
                            &deadline, CLOCK_MONOTONIC);
  if (rc < 0 && errno == ENOSYS) {
    unsupported.store(true);
    return poll_any(waiters, limit);
  }
  return !(rc < 0 && errno == ETIMEDOUT);
#else
  return poll_any(waiters, limit);
#endif
}

void futex_wake_all(std::atomic<uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
            0);
}

}  // namespace gradwire
