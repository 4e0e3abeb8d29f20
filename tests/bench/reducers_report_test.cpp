#include "cases/reducers_report.h"

#include <gtest/gtest.h>

namespace gradwire::bench {
namespace {

using ddp::ReductionSchedule;

// Samples chosen so every statistic is easy to compute: 1..5 has mean 3 and p50 3.
BucketSizeResult example() {
  BucketSizeResult result;
  result.bucket_size_mb = 3;
  result.reducers.push_back(
      {ReductionSchedule::kOverlapped, 9, {1, 2, 3, 4, 5}, {10, 20, 30, 40, 50}});
  result.reducers.push_back(
      {ReductionSchedule::kAfterBackward, 9, {2, 4, 6, 8, 10}, {15, 30, 45, 60, 75}});
  result.reducers.push_back(
      {ReductionSchedule::kAfterBackwardSync, 9, {1, 2, 3, 4, 5}, {5, 10, 15, 20, 25}});
  return result;
}

TEST(ReducersReportTest, ChangePercentIsCompareDdps) {
  EXPECT_DOUBLE_EQ(latency_change_percent(10, 15), 50);
  EXPECT_DOUBLE_EQ(latency_change_percent(10, 5), -50);
  EXPECT_DOUBLE_EQ(latency_change_percent(0, 5), 0);
}

TEST(ReducersReportTest, SummaryTables) {
  const std::string text = reducers_summary(example());
  EXPECT_NE(text.find("=== Summary for bucket size: 3 MiB (9 buckets), latency in ms ==="),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("DDP: [forward]"), std::string::npos) << text;
  EXPECT_NE(text.find("DDP: [backward]"), std::string::npos) << text;
  // forward: async is twice the baseline at every statistic; sync equals it.
  EXPECT_NE(text.find("async                  6.00  +100.0%       6.00  +100.0%"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sync                   3.00    +0.0%       3.00    +0.0%"),
            std::string::npos)
      << text;
  // backward: async +50 %, sync -50 %.
  EXPECT_NE(text.find("async                 45.00   +50.0%      45.00   +50.0%"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sync                  15.00   -50.0%      15.00   -50.0%"),
            std::string::npos)
      << text;
}

TEST(ReducersReportTest, OverviewByBucketSize) {
  BucketSizeResult second = example();
  second.bucket_size_mb = 2.5;
  const std::string text = reducers_overview({example(), second});
  EXPECT_NE(text.find("delta% against overlapped"), std::string::npos) << text;
  EXPECT_NE(
      text.find("         3        9        30.00        45.00        15.00   +50.0%   -50.0%"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("      2.50        9"), std::string::npos) << text;
}

TEST(ReducersReportTest, Json) {
  const nlohmann::json json = reducers_results_json({example()});
  ASSERT_EQ(json.size(), 1u);
  EXPECT_EQ(json[0].at("bucket_size_mb"), 3.0);
  const auto& reducers = json[0].at("reducers");
  ASSERT_EQ(reducers.size(), 3u);
  EXPECT_EQ(reducers[0].at("reducer"), "overlapped");
  EXPECT_EQ(reducers[1].at("reducer"), "async");
  EXPECT_EQ(reducers[2].at("reducer"), "sync");
  EXPECT_EQ(reducers[1].at("buckets"), 9);
  EXPECT_EQ(reducers[1].at("forward_ms").at("count"), 5);
  EXPECT_DOUBLE_EQ(reducers[1].at("forward_ms").at("mean").get<double>(), 6);
  EXPECT_DOUBLE_EQ(reducers[1].at("backward_ms").at("p50").get<double>(), 45);
  EXPECT_DOUBLE_EQ(reducers[1].at("backward_ms").at("max").get<double>(), 75);
  EXPECT_EQ(reducers[2].at("backward_samples_ms").size(), 5u);
}

}  // namespace
}  // namespace gradwire::bench
