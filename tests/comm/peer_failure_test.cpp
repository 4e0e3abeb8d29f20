// A rank that dies or stalls mid-collective gives the survivors the promised error, naming the
// operation, the ranks and the time waited, within the configured timeout. Real processes.
#include <gtest/gtest.h>

#include <chrono>

#include "support/worker_processes.h"

namespace {

gradwire::testing::LaunchedJob run_job(const std::string& mode, int ranks,
                                       const std::string& timeout) {
  return gradwire::testing::launch_job("peer_failure_" + mode, {FAILURE_WORKER_PATH, mode}, ranks,
                                       {{"GRADWIRE_TIMEOUT", timeout}, {"OMP_NUM_THREADS", "1"}});
}

// The milliseconds a survivor printed in "CAUGHT <type> after <ms> ms"; -1 when it did not.
long caught_after_ms(const std::string& log, const std::string& type) {
  const std::string head = "CAUGHT " + type + " after ";
  const auto at = log.find(head);
  return at == std::string::npos ? -1 : std::stol(log.substr(at + head.size()));
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
  // Far sooner than the 20 s timeout: a dead peer is noticed, not waited out. Timed by each
  // survivor from its failing collective (the job's own time also counts its processes' start,
  // seconds on a loaded machine).
  for (int r = 0; r < 2; ++r) EXPECT_LT(caught_after_ms(outcome.logs[r], "PeerLostError"), 10000);
}

TEST(PeerFailure, StalledRankTimesOutWithinTheLimit) {
  auto outcome = run_job("stall", 2, "2s");
  EXPECT_EQ(outcome.result.workers.at(0).exit_code, 0) << outcome.logs[0];
  const auto& log = outcome.logs[0];
  EXPECT_NE(log.find("CAUGHT TimeoutError"), std::string::npos) << log;
  EXPECT_NE(log.find("over ranks [0, 1]"), std::string::npos) << log;
  EXPECT_NE(log.find("timed out (limit 2.00 s)"), std::string::npos) << log;
  // The survivor gave up around the timeout, not long after: the 2 s, then the desync report's
  // look at the peers (under a second), with a margin for a loaded machine.
  const long ms = caught_after_ms(log, "TimeoutError");
  EXPECT_GE(ms, 1900);
  EXPECT_LT(ms, 6000);
}

}  // namespace
