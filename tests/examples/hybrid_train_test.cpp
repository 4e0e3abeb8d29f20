// examples/hybrid_train as a real job under run_workers (gradwire-run's engine) with 2 parameter
// servers and 2 trainers: it trains (the loss falls), and both trainers end with the same dense
// parameters.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>

#include "example_job.h"

namespace {

TEST(HybridTrainExample, TwoTrainersAndTwoServersTrain) {
  gradwire::launch::LaunchOptions options;
  options.nproc_per_node = 2;
  options.servers = 2;
  options.server_command = {PS_SERVER_PATH, "--threads", "1"};
  options.command = {HYBRID_TRAIN_PATH, "60"};
  const auto [result, out] = gradwire::testing::run_example(options);
  ASSERT_EQ(result.exit_code(), 0) << result.summary() << out;
  // One process per server, or both in one on a host with few cores (--server-processes).
  size_t servers = 0;
  for (const auto& process : result.servers) servers += process.server_indices.size();
  ASSERT_EQ(servers, 2u);

  const auto checksums =
      gradwire::testing::values_by_rank(out, R"(rank (\d) dense checksum (\S+))");
  ASSERT_EQ(checksums.size(), 2u) << out;
  EXPECT_EQ(checksums.at("0"), checksums.at("1")) << out;

  std::smatch first, last;
  ASSERT_TRUE(std::regex_search(out, first, std::regex(R"(step 1 loss (\S+))"))) << out;
  ASSERT_TRUE(std::regex_search(out, last, std::regex(R"(step 60 loss (\S+))"))) << out;
  EXPECT_LT(std::stod(last[1]), 0.7 * std::stod(first[1])) << out;
  EXPECT_THAT(out, ::testing::ContainsRegex(R"(\[servers? 0)"));
}

}  // namespace
