// Futex waits and wake-ups on a 32-bit word in memory shared between processes (not
// FUTEX_PRIVATE): the one home of the system call for comm's shm backend and the parameter
// servers' call channels. Linux only.
//
// Thread safety: any thread may wait or wake; the word must stay mapped meanwhile.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

namespace gradwire {

// Sleeps while `word` holds `expected`, for at most `limit`. Returns false when the limit passed,
// true otherwise (woken, the word was already different, or a signal): callers look again.
bool futex_wait(std::atomic<uint32_t>& word, uint32_t expected, std::chrono::nanoseconds limit);

// One word of futex_wait_any: sleep while it holds `expected`.
struct FutexWaiter {
  std::atomic<uint32_t>* word;
  uint32_t expected;
};

// The most words futex_wait_any sleeps on at once (the kernel's FUTEX_WAITV_MAX); with more, or
// on a kernel without futex_waitv (before Linux 5.16), it looks every kFutexPollSlice instead.
inline constexpr size_t kFutexWaitAnyMax = 128;
inline constexpr std::chrono::milliseconds kFutexPollSlice{1};

// Sleeps while every word holds its expected value, for at most `limit` (an empty list sleeps
// `limit`). Returns false when the limit passed, true otherwise (one was woken or already
// different, a signal, or a poll slice passed): callers look again.
bool futex_wait_any(const std::vector<FutexWaiter>& waiters, std::chrono::nanoseconds limit);

// Wakes every thread sleeping on `word`.
void futex_wake_all(std::atomic<uint32_t>& word);

}  // namespace gradwire
