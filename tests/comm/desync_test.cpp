// Desync reports with real processes on loopback, on Gloo and on shm: a rank stopped with SIGSTOP
// is named, with its last collective, in the survivors' TimeoutError; a rank that calls a
// different collective is named with both operations; a stopped store host cannot hang the
// error path. Every process started here is killed and reaped before the test ends.
// A rank that caught its error stays until every rank that times out has printed its report, when
// the test releases them (desync_worker.cpp): as soon as the reports are written, not after a
// fixed linger.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>
#include <vector>

#include "support/worker_processes.h"

namespace {

using gradwire::testing::WorkerJob;

// A job of `ranks` desync_worker processes in `mode` on `backend`, on a free loopback port.
WorkerJob desync_job(const std::string& backend, const std::string& mode, int ranks) {
  gradwire::testing::WorkerJobOptions options;
  options.program = DESYNC_WORKER_PATH;
  options.args = {mode};
  options.ranks = ranks;
  options.env = {
      {"GRADWIRE_BACKEND", backend}, {"GRADWIRE_TIMEOUT", "2s"}, {"OMP_NUM_THREADS", "1"}};
  options.name = "desync_" + backend + "_" + mode;
  return WorkerJob(options);
}

// Waits until each of `ranks` printed its outcome ("CAUGHT ..." or "NO ERROR"), then releases
// them (SIGUSR1) to exit. False, naming the rank, when one has not printed it by `limit`.
::testing::AssertionResult release_after_reports(const WorkerJob& job,
                                                 const std::vector<int>& ranks,
                                                 std::chrono::seconds limit) {
  const auto deadline = WorkerJob::Clock::now() + limit;
  for (int r : ranks) {
    while (job.log(r).find("CAUGHT") == std::string::npos &&
           job.log(r).find("NO ERROR") == std::string::npos) {
      if (WorkerJob::Clock::now() > deadline) {
        return ::testing::AssertionFailure() << "rank " << r << " printed no outcome:\n"
                                             << job.log(r);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  for (int r : ranks) kill(job.pid(r), SIGUSR1);
  return ::testing::AssertionSuccess();
}

class Desync : public ::testing::TestWithParam<std::string> {};

TEST_P(Desync, StoppedRankIsNamedWithItsLastCollective) {
  auto job = desync_job(GetParam(), "stop", 2);
  ASSERT_TRUE(job.wait_for_output(1, "READY", std::chrono::seconds(60))) << job.log(1);
  ASSERT_EQ(kill(job.pid(1), SIGSTOP), 0);
  ASSERT_TRUE(release_after_reports(job, {0}, std::chrono::seconds(60)));
  EXPECT_EQ(job.wait_exit(0, std::chrono::seconds(60)), 0) << job.log(0);
  const auto log = job.log(0);
  EXPECT_NE(log.find("CAUGHT TimeoutError"), std::string::npos) << log;
  EXPECT_NE(log.find("allreduce(sum) of 1024 Float elements over ranks [0, 1]"), std::string::npos)
      << log;
  EXPECT_NE(log.find("this rank (0) is at #3 of the communicator"), std::string::npos) << log;
  EXPECT_NE(log.find("Rank 1 (pid " + std::to_string(job.pid(1)) + " on "), std::string::npos)
      << log;
  EXPECT_NE(log.find("never reached #3: its last collective was #2, broadcast(root 0) of 1000 "
                     "Float elements; its progress record did not change"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("it looks stopped or hung"), std::string::npos) << log;
}

TEST_P(Desync, RankStoppedInsideTheCollectiveIsNamed) {
  auto job = desync_job(GetParam(), "stop-inside", 2);
  ASSERT_TRUE(release_after_reports(job, {0}, std::chrono::seconds(60)));
  EXPECT_EQ(job.wait_exit(0, std::chrono::seconds(60)), 0) << job.log(0);
  const auto log = job.log(0);
  EXPECT_NE(job.log(1).find("STOPPING"), std::string::npos) << job.log(1);
  EXPECT_NE(log.find("CAUGHT TimeoutError"), std::string::npos) << log;
  // Gloo cannot finish #3 without rank 1; shm's one-step allreduce can, and waits in #4.
  EXPECT_NE(log.find("Rank 1 (pid " + std::to_string(job.pid(1)) + " on "), std::string::npos)
      << log;
  EXPECT_NE(log.find("it looks stopped or hung"), std::string::npos) << log;
}

TEST_P(Desync, RankCallingBroadcastInsteadIsNamedWithBothOperations) {
  auto job = desync_job(GetParam(), "broadcast", 2);
  const pid_t pid1 = job.pid(1);
  ASSERT_TRUE(release_after_reports(job, {0, 1}, std::chrono::seconds(60)));
  EXPECT_EQ(job.wait_exit(0, std::chrono::seconds(60)), 0) << job.log(0);
  EXPECT_EQ(job.wait_exit(1, std::chrono::seconds(60)), 0) << job.log(1);
  const auto log = job.log(0);
  EXPECT_NE(log.find("CAUGHT"), std::string::npos) << log;
  EXPECT_NE(log.find("this rank (0) is at #3 of the communicator, allreduce(sum) of 1024 Float "
                     "elements"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("Rank 1 (pid " + std::to_string(pid1) + " on "), std::string::npos) << log;
  EXPECT_NE(log.find("called broadcast(root 0) of 1024 Float elements as #3 instead"),
            std::string::npos)
      << log;
}

TEST_P(Desync, RankCallingAllgatherInsteadIsNamedWithBothOperations) {
  auto job = desync_job(GetParam(), "allgather", 2);
  ASSERT_TRUE(release_after_reports(job, {0, 1}, std::chrono::seconds(60)));
  EXPECT_EQ(job.wait_exit(0, std::chrono::seconds(60)), 0) << job.log(0);
  EXPECT_EQ(job.wait_exit(1, std::chrono::seconds(60)), 0) << job.log(1);
  for (int r = 0; r < 2; ++r) {
    const auto log = job.log(r);
    EXPECT_NE(log.find("CAUGHT"), std::string::npos) << log;
    // Each side names the other's operation.
    const std::string theirs =
        r == 0 ? "allgather of 1024 Float elements" : "allreduce(sum) of 1024 Float elements";
    EXPECT_NE(log.find("called " + theirs + " as #3 instead"), std::string::npos) << log;
  }
}

TEST_P(Desync, StoppedStoreHostDoesNotHangTheErrorPath) {
  auto job = desync_job(GetParam(), "stop-host", 2);
  ASSERT_TRUE(job.wait_for_output(0, "READY", std::chrono::seconds(60))) << job.log(0);
  ASSERT_EQ(kill(job.pid(0), SIGSTOP), 0);
  // 2 s timeout, then at most about 2 s reading the board: far below 30 s.
  ASSERT_TRUE(release_after_reports(job, {1}, std::chrono::seconds(30)));
  EXPECT_EQ(job.wait_exit(1, std::chrono::seconds(30)), 0) << job.log(1);
  const auto log = job.log(1);
  EXPECT_NE(log.find("CAUGHT TimeoutError"), std::string::npos) << log;
  EXPECT_NE(log.find("The progress of rank 0 (pid " + std::to_string(job.pid(0))),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("could not be read"), std::string::npos) << log;
}

INSTANTIATE_TEST_SUITE_P(Backends, Desync, ::testing::Values("gloo", "shm"));

}  // namespace
