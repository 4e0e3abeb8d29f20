// Retrying idempotent calls (lookups, table creation) while a server is briefly unreachable:
// exponential backoff on UNAVAILABLE, never past the call's deadline. Non-idempotent calls
// (pushes, steps) must not be retried: the server may have applied them.
//
// Thread safety: pure functions; call_with_retry sleeps on the calling thread between attempts.
#pragma once

#include <grpcpp/support/status.h>

#include <chrono>
#include <functional>
#include <optional>

namespace gradwire::rpc {

struct RetryPolicy {
  // Attempts after the first one.
  int max_retries = 8;
  // The wait before retry k (0-based) is initial_backoff * 2^k, at most max_backoff.
  std::chrono::milliseconds initial_backoff{50};
  std::chrono::milliseconds max_backoff{2000};
};

// The wait before retry `retry` (0-based) under `policy`.
std::chrono::milliseconds retry_backoff(const RetryPolicy& policy, int retry);

// How long to wait before trying again after a failed attempt with `code`, when `retries_done`
// retries were made and `time_left` remains before the deadline; nullopt: do not retry (not
// UNAVAILABLE, retries spent, or the wait would reach the deadline).
std::optional<std::chrono::milliseconds> next_retry_delay(grpc::StatusCode code, int retries_done,
                                                          const RetryPolicy& policy,
                                                          std::chrono::milliseconds time_left);

// Runs `attempt` (one call with a fresh ClientContext whose deadline is `deadline`; returns its
// status) and again after a backoff while next_retry_delay allows. Returns the last status.
// Blocks: at most until `deadline` plus one attempt's own deadline handling.
grpc::Status call_with_retry(const std::function<grpc::Status()>& attempt,
                             const RetryPolicy& policy,
                             std::chrono::steady_clock::time_point deadline);

}  // namespace gradwire::rpc
