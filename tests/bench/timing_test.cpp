#include "harness/timing.h"

#include <gtest/gtest.h>

#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

TEST(IterationsForSizeTest, SmallMessagesGetEveryIteration) {
  const IterationPolicy policy{50, 5, 3, 1024 * kMiB};
  const IterationCounts counts = iterations_for_size(policy, 8);
  EXPECT_EQ(counts.timed, 50);
  EXPECT_EQ(counts.warmup, 5);
}

TEST(IterationsForSizeTest, LargeMessagesGetFewerDownToTheFloor) {
  const IterationPolicy policy{50, 5, 3, 1024 * kMiB};
  EXPECT_EQ(iterations_for_size(policy, 32 * kMiB).timed, 32);
  EXPECT_EQ(iterations_for_size(policy, 32 * kMiB).warmup, 4);  // ceil(5 * 32 / 50)
  EXPECT_EQ(iterations_for_size(policy, 256 * kMiB).timed, 4);
  EXPECT_EQ(iterations_for_size(policy, 256 * kMiB).warmup, 1);
  EXPECT_EQ(iterations_for_size(policy, 1024 * kMiB * 4).timed, 3);
}

TEST(IterationsForSizeTest, NoWarmupStaysNone) {
  EXPECT_EQ(iterations_for_size(IterationPolicy{10, 0, 3, kMiB}, 8).warmup, 0);
}

TEST(IterationsForSizeTest, FloorNeverExceedsIters) {
  EXPECT_EQ(iterations_for_size(IterationPolicy{2, 1, 3, 1}, kMiB).timed, 2);
}

TEST(IterationsForSizeTest, RejectsBadPolicies) {
  EXPECT_THROW(iterations_for_size(IterationPolicy{0, 1, 1, kMiB}, 8), InvalidArgument);
  EXPECT_THROW(iterations_for_size(IterationPolicy{1, -1, 1, kMiB}, 8), InvalidArgument);
  EXPECT_THROW(iterations_for_size(IterationPolicy{1, 1, 1, kMiB}, 0), InvalidArgument);
}

TEST(TimeIterationsTest, RunsWarmupUntimedThenTimesEachIteration) {
  int calls = 0;
  const auto seconds = time_iterations(IterationCounts{3, 4}, [&] { ++calls; });
  EXPECT_EQ(calls, 7);
  ASSERT_EQ(seconds.size(), 4u);
  for (double s : seconds) EXPECT_GE(s, 0.0);
}

TEST(TimeIterationsTest, PropagatesExceptions) {
  EXPECT_THROW(time_iterations(IterationCounts{0, 1}, [] { throw TimeoutError("late"); }),
               TimeoutError);
}

}  // namespace
}  // namespace gradwire::bench
