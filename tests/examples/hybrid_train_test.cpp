// examples/hybrid_train as a real job under run_workers (gradwire-run's engine) with 2 parameter
// servers and 2 trainers: it trains (the loss falls), and both trainers end with the same dense
// parameters.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "gradwire/launch/launcher.h"

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(HybridTrainExample, TwoTrainersAndTwoServersTrain) {
  char path[] = "/tmp/gradwire_hybrid_train_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  gradwire::launch::LaunchOptions options;
  options.nproc_per_node = 2;
  options.servers = 2;
  options.server_command = {PS_SERVER_PATH, "--threads", "1"};
  options.command = {HYBRID_TRAIN_PATH, "60"};
  options.stdout_fd = fd;
  options.forward_signals = false;
  options.threads_per_worker = 1;
  auto result = gradwire::launch::run_workers(options);
  close(fd);
  std::string out = slurp(path);
  std::remove(path);
  ASSERT_EQ(result.exit_code(), 0) << result.summary() << out;
  ASSERT_EQ(result.servers.size(), 2u);

  std::regex checksum_line(R"(rank (\d) dense checksum (\S+))");
  std::map<std::string, std::string> checksums;
  for (std::sregex_iterator it(out.begin(), out.end(), checksum_line), end; it != end; ++it) {
    checksums[(*it)[1]] = (*it)[2];
  }
  ASSERT_EQ(checksums.size(), 2u) << out;
  EXPECT_EQ(checksums["0"], checksums["1"]) << out;

  std::smatch first, last;
  ASSERT_TRUE(std::regex_search(out, first, std::regex(R"(step 1 loss (\S+))"))) << out;
  ASSERT_TRUE(std::regex_search(out, last, std::regex(R"(step 60 loss (\S+))"))) << out;
  EXPECT_LT(std::stod(last[1]), 0.7 * std::stod(first[1])) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("[server 0]"));
}

}  // namespace
