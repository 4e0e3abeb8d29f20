#include "gradwire/common/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>

namespace gradwire {

static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words are plain words");

bool futex_wait(std::atomic<uint32_t>& word, uint32_t expected, std::chrono::nanoseconds limit) {
  if (limit.count() <= 0) return false;
  timespec timeout{};
  timeout.tv_sec = static_cast<time_t>(limit.count() / 1000000000);
  timeout.tv_nsec = static_cast<long>(limit.count() % 1000000000);
  const long rc = ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, expected,
                            &timeout, nullptr, 0);
  return !(rc != 0 && errno == ETIMEDOUT);
}

void futex_wake_all(std::atomic<uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
            0);
}

}  // namespace gradwire
