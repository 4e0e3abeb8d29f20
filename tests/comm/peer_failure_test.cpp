// A rank that dies or stalls mid-collective gives the survivors the promised error, naming the
// operation, the ranks and the time waited, within the configured timeout. Real processes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "support/worker_processes.h"

namespace {

gradwire::testing::LaunchedJob run_job(const std::string& mode, int ranks,
                                       const std::string& timeout) {
  return gradwire::testing::launch_job("peer_failure_" + mode, {FAILURE_WORKER_PATH, mode}, ranks,
                                       {{"GRADWIRE_TIMEOUT", timeout}, {"OMP_NUM_THREADS", "1"}});
}

TEST(PeerFailure, DeadRankIsNamedOnEverySurvivor) {
  auto outcome = run_job("die", 3, "20s");
  EXPECT_EQ(outcome.result.exit_code(), 0) << outcome.result.summary();
  for (int r = 0; r < 2; ++r) {
    const auto& log = outcome.logs[r];
    EXPECT_NE(log.find("CAUGHT PeerLostError"), std::string::npos) << "rank " << r << ": " << log;
    EXPECT_NE(log.find("allreduce(sum) of 65536 Float elements over ranks [0, 1, 2]"),
              std::string::npos)
        << log;
  }
  // Rank 0 is connected to the victim directly: it can name it.
  EXPECT_NE(outcome.logs[0].find("rank 2 (pid"), std::string::npos) << outcome.logs[0];
  EXPECT_NE(outcome.logs[0].find("no longer running"), std::string::npos) << outcome.logs[0];
  // Far sooner than the 20 s timeout: a dead peer is noticed, not waited out.
  EXPECT_LT(outcome.took, std::chrono::seconds(15));
}

TEST(PeerFailure, StalledRankTimesOutWithinTheLimit) {
  auto outcome = run_job("stall", 2, "2s");
  EXPECT_EQ(outcome.result.workers.at(0).exit_code, 0) << outcome.logs[0];
  const auto& log = outcome.logs[0];
  EXPECT_NE(log.find("CAUGHT TimeoutError"), std::string::npos) << log;
  EXPECT_NE(log.find("over ranks [0, 1]"), std::string::npos) << log;
  EXPECT_NE(log.find("timed out (limit 2.00 s)"), std::string::npos) << log;
  // The survivor gave up around the timeout, not long after.
  auto at = log.find("CAUGHT TimeoutError after ");
  ASSERT_NE(at, std::string::npos);
  long ms = std::stol(log.substr(at + std::strlen("CAUGHT TimeoutError after ")));
  EXPECT_GE(ms, 1900);
  EXPECT_LT(ms, 6000);
}

}  // namespace
