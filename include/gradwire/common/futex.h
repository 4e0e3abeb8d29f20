// Futex waits and wake-ups on a 32-bit word in memory shared between processes (not
// FUTEX_PRIVATE): the one home of the system call for comm's shm backend and the parameter
// servers' call channels. Linux only.
//
// Thread safety: any thread may wait or wake; the word must stay mapped meanwhile.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace gradwire {

// Sleeps while `word` holds `expected`, for at most `limit`. Returns false when the limit passed,
// true otherwise (woken, the word was already different, or a signal): callers look again.
bool futex_wait(std::atomic<uint32_t>& word, uint32_t expected, std::chrono::nanoseconds limit);

// Wakes every thread sleeping on `word`.
void futex_wake_all(std::atomic<uint32_t>& word);

}  // namespace gradwire
