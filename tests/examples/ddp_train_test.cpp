// examples/ddp_train as a real 2-process job under run_workers (gradwire-run's engine): it
// trains, and both ranks end with the same parameters.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "example_job.h"

namespace {

TEST(DdpTrainExample, TwoRanksEndWithEqualParameters) {
  gradwire::launch::LaunchOptions options;
  options.nproc_per_node = 2;
  options.command = {DDP_TRAIN_PATH, "30"};
  const auto [result, out] = gradwire::testing::run_example(options);
  ASSERT_EQ(result.exit_code(), 0) << result.summary() << out;

  const auto checksums =
      gradwire::testing::values_by_rank(out, R"(rank (\d) parameter checksum (\S+))");
  ASSERT_EQ(checksums.size(), 2u) << out;
  EXPECT_EQ(checksums.at("0"), checksums.at("1")) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("step 30 loss"));
  EXPECT_THAT(out, ::testing::HasSubstr("bucket 0:"));
}

}  // namespace
