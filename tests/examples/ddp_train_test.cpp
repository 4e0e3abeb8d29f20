// examples/ddp_train as a real 2-process job under run_workers (gradwire-run's engine): it
// trains, and both ranks end with the same parameters.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
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

TEST(DdpTrainExample, TwoRanksEndWithEqualParameters) {
  char path[] = "/tmp/gradwire_ddp_train_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  gradwire::launch::LaunchOptions options;
  options.nproc_per_node = 2;
  options.command = {DDP_TRAIN_PATH, "30"};
  options.stdout_fd = fd;
  options.forward_signals = false;
  options.threads_per_worker = 1;
  auto result = gradwire::launch::run_workers(options);
  close(fd);
  std::string out = slurp(path);
  std::remove(path);
  ASSERT_EQ(result.exit_code(), 0) << result.summary() << out;

  std::regex checksum_line(R"(rank (\d) parameter checksum (\S+))");
  std::map<std::string, std::string> checksums;
  for (std::sregex_iterator it(out.begin(), out.end(), checksum_line), end; it != end; ++it) {
    checksums[(*it)[1]] = (*it)[2];
  }
  ASSERT_EQ(checksums.size(), 2u) << out;
  EXPECT_EQ(checksums["0"], checksums["1"]) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("step 30 loss"));
  EXPECT_THAT(out, ::testing::HasSubstr("bucket 0:"));
}

}  // namespace
