// Retries of idempotent calls: only UNAVAILABLE, exponential backoff, bounded by the retry
// count and the deadline.
#include "rpc/retry.h"

#include <gtest/gtest.h>

namespace gradwire::rpc {
namespace {

using namespace std::chrono_literals;

TEST(RetryBackoff, DoublesUpToTheCap) {
  const RetryPolicy policy{10, 50ms, 300ms};
  EXPECT_EQ(retry_backoff(policy, 0), 50ms);
  EXPECT_EQ(retry_backoff(policy, 1), 100ms);
  EXPECT_EQ(retry_backoff(policy, 2), 200ms);
  EXPECT_EQ(retry_backoff(policy, 3), 300ms);
  EXPECT_EQ(retry_backoff(policy, 60), 300ms);
}

TEST(NextRetryDelay, OnlyUnavailableWithinRetriesAndDeadline) {
  const RetryPolicy policy{2, 50ms, 1000ms};
  EXPECT_EQ(next_retry_delay(grpc::StatusCode::UNAVAILABLE, 0, policy, 10s), 50ms);
  EXPECT_EQ(next_retry_delay(grpc::StatusCode::UNAVAILABLE, 1, policy, 10s), 100ms);
  EXPECT_EQ(next_retry_delay(grpc::StatusCode::UNAVAILABLE, 2, policy, 10s), std::nullopt);
  EXPECT_EQ(next_retry_delay(grpc::StatusCode::UNAVAILABLE, 0, policy, 50ms), std::nullopt);
  EXPECT_EQ(next_retry_delay(grpc::StatusCode::DEADLINE_EXCEEDED, 0, policy, 10s), std::nullopt);
  EXPECT_EQ(next_retry_delay(grpc::StatusCode::INVALID_ARGUMENT, 0, policy, 10s), std::nullopt);
}

TEST(CallWithRetry, RetriesUnavailableUntilSuccess) {
  int calls = 0;
  const grpc::Status status = call_with_retry(
      [&] {
        ++calls;
        return calls < 3 ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "down") : grpc::Status::OK;
      },
      RetryPolicy{5, 1ms, 4ms}, std::chrono::steady_clock::now() + 10s);
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(calls, 3);
}

TEST(CallWithRetry, GivesUpAfterMaxRetriesWithTheLastStatus) {
  int calls = 0;
  const grpc::Status status = call_with_retry(
      [&] {
        ++calls;
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "down " + std::to_string(calls));
      },
      RetryPolicy{2, 1ms, 4ms}, std::chrono::steady_clock::now() + 10s);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(status.error_message(), "down 3");
  EXPECT_EQ(calls, 3);
}

TEST(CallWithRetry, DoesNotRetryOtherErrors) {
  int calls = 0;
  const grpc::Status status = call_with_retry(
      [&] {
        ++calls;
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad");
      },
      RetryPolicy{}, std::chrono::steady_clock::now() + 10s);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(calls, 1);
}

TEST(CallWithRetry, StopsAtThePassedDeadline) {
  int calls = 0;
  call_with_retry(
      [&] {
        ++calls;
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "down");
      },
      RetryPolicy{100, 1ms, 1ms}, std::chrono::steady_clock::now() - 1s);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace gradwire::rpc
