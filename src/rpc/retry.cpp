#include "rpc/retry.h"

#include <algorithm>
#include <thread>

namespace gradwire::rpc {

std::chrono::milliseconds retry_backoff(const RetryPolicy& policy, int retry) {
  std::chrono::milliseconds wait = policy.initial_backoff;
  for (int i = 0; i < retry && wait < policy.max_backoff; ++i) wait *= 2;
  return std::min(wait, policy.max_backoff);
}

std::optional<std::chrono::milliseconds> next_retry_delay(grpc::StatusCode code, int retries_done,
                                                          const RetryPolicy& policy,
                                                          std::chrono::milliseconds time_left) {
  if (code != grpc::StatusCode::UNAVAILABLE) return std::nullopt;
  if (retries_done >= policy.max_retries) return std::nullopt;
  const std::chrono::milliseconds wait = retry_backoff(policy, retries_done);
  if (wait >= time_left) return std::nullopt;
  return wait;
}

grpc::Status call_with_retry(const std::function<grpc::Status()>& attempt,
                             const RetryPolicy& policy,
                             std::chrono::steady_clock::time_point deadline) {
  for (int retries_done = 0;; ++retries_done) {
    grpc::Status status = attempt();
    if (status.ok()) return status;
    const auto time_left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    const std::optional<std::chrono::milliseconds> wait =
        next_retry_delay(status.error_code(), retries_done, policy, time_left);
    if (!wait) return status;
    std::this_thread::sleep_for(*wait);
  }
}

}  // namespace gradwire::rpc
