#include "harness/stats.h"

#include <gtest/gtest.h>

#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

TEST(PercentileTest, InterpolatesLinearlyBetweenClosestRanks) {
  // Sorted: 10 20 30 40 50; position = p/100 * 4.
  const std::vector<double> samples = {30, 10, 50, 20, 40};
  EXPECT_DOUBLE_EQ(percentile(samples, 0), 10);
  EXPECT_DOUBLE_EQ(percentile(samples, 50), 30);    // position 2
  EXPECT_DOUBLE_EQ(percentile(samples, 75), 40);    // position 3
  EXPECT_DOUBLE_EQ(percentile(samples, 90), 46);    // position 3.6: 40 + 0.6 * 10
  EXPECT_DOUBLE_EQ(percentile(samples, 95), 48);    // position 3.8
  EXPECT_DOUBLE_EQ(percentile(samples, 99), 49.6);  // position 3.96
  EXPECT_DOUBLE_EQ(percentile(samples, 100), 50);
}

TEST(PercentileTest, EvenCountMedianIsTheMidpoint) {
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 50), 2.5);   // position 1.5
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 25), 1.75);  // position 0.75
}

TEST(PercentileTest, SingleSampleIsEveryPercentile) {
  EXPECT_DOUBLE_EQ(percentile({7}, 0), 7);
  EXPECT_DOUBLE_EQ(percentile({7}, 99), 7);
}

TEST(PercentileTest, RejectsEmptyAndOutOfRange) {
  EXPECT_THROW(percentile({}, 50), InvalidArgument);
  EXPECT_THROW(percentile({1, 2}, -1), InvalidArgument);
  EXPECT_THROW(percentile({1, 2}, 100.5), InvalidArgument);
}

TEST(SummarizeTest, ReportsMeanExtremesAndPercentiles) {
  // 1..10: mean 5.5; position = p/100 * 9.
  std::vector<double> samples;
  for (int i = 10; i >= 1; --i) samples.push_back(i);
  const Summary summary = summarize(samples);
  EXPECT_EQ(summary.count, 10u);
  EXPECT_DOUBLE_EQ(summary.mean, 5.5);
  EXPECT_DOUBLE_EQ(summary.min, 1);
  EXPECT_DOUBLE_EQ(summary.max, 10);
  EXPECT_DOUBLE_EQ(summary.p50, 5.5);   // 4.5 -> 5 + 0.5
  EXPECT_DOUBLE_EQ(summary.p75, 7.75);  // 6.75 -> 7 + 0.75
  EXPECT_DOUBLE_EQ(summary.p90, 9.1);   // 8.1 -> 9 + 0.1
  EXPECT_DOUBLE_EQ(summary.p95, 9.55);  // 8.55
  EXPECT_DOUBLE_EQ(summary.p99, 9.91);  // 8.91
}

TEST(SummarizeTest, RejectsEmpty) { EXPECT_THROW(summarize({}), InvalidArgument); }

TEST(RatePercentilesTest, InterpolatesAndDividesTheBatchBySeconds) {
  // Sorted 0.11 .. 0.15: p50 at position 2, p75 at 3, p90 at 3.6, p95 at 3.8.
  const auto rows = rate_percentiles({0.15, 0.11, 0.14, 0.12, 0.13}, 32, {50, 75, 90, 95});
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].percentile, 50);
  EXPECT_NEAR(rows[0].seconds, 0.13, 1e-12);
  EXPECT_NEAR(rows[1].seconds, 0.14, 1e-12);
  EXPECT_NEAR(rows[2].seconds, 0.146, 1e-12);
  EXPECT_NEAR(rows[3].seconds, 0.148, 1e-12);
  EXPECT_NEAR(rows[1].examples_per_second, 32 / 0.14, 1e-9);
  EXPECT_THROW(rate_percentiles({}, 32, {50}), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::bench
