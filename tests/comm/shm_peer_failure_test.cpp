// The shm backend with real processes: a peer SIGKILLed in the middle of a collective is named by
// every survivor in a PeerLostError long before the timeout, and the job leaves nothing in
// /dev/shm, neither once attached nor after the kill; the existing failure worker's dead and
// stalled peers give PeerLostError and TimeoutError on shm as on Gloo.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "support/worker_processes.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using gradwire::testing::WorkerJob;

int job_segments(int port) {
  const std::string prefix = "gradwire-" + std::to_string(port) + "-";
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/dev/shm")) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) ++count;
  }
  return count;
}

TEST(ShmPeerFailure, SigkilledRankIsNamedAndNothingStaysInDevShm) {
  const int ranks = 3, victim = 2;
  gradwire::testing::WorkerJobOptions options;
  options.program = SHM_FAILURE_WORKER_PATH;
  options.ranks = ranks;
  options.env = {
      {"GRADWIRE_BACKEND", "shm"}, {"GRADWIRE_TIMEOUT", "60s"}, {"OMP_NUM_THREADS", "1"}};
  options.name = "shm_kill";
  WorkerJob job(options);
  // Every rank attached and is busy allreducing 16 MiB tensors.
  const auto ready_deadline = Clock::now() + std::chrono::seconds(60);
  for (int r = 0; r < ranks; ++r) {
    while (job.log(r).find("READY") == std::string::npos && Clock::now() < ready_deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(job.pid(victim), SIGKILL);
  const auto killed_at = Clock::now();
  EXPECT_EQ(job.wait_exit(victim, killed_at + std::chrono::seconds(10)), 128 + SIGKILL);
  std::vector<int> codes;
  for (int r = 0; r < ranks; ++r) {
    if (r != victim) codes.push_back(job.wait_exit(r, killed_at + std::chrono::seconds(40)));
  }
  const auto noticed_after = Clock::now() - killed_at;
  for (int r = 0; r < ranks; ++r) {
    const auto text = job.log(r);
    EXPECT_NE(text.find("BACKEND shm"), std::string::npos) << text;
    EXPECT_NE(text.find("SEGMENTS 0"), std::string::npos) << "rank " << r << ": " << text;
    if (r == victim) continue;
    EXPECT_EQ(codes[r], 0) << text;
    EXPECT_NE(text.find("CAUGHT PeerLostError"), std::string::npos) << text;
    EXPECT_NE(text.find("allreduce(sum) of 4194304 Float elements over ranks [0, 1, 2]"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("rank 2 (pid " + std::to_string(job.pid(victim))), std::string::npos)
        << text;
    EXPECT_NE(text.find("no longer running"), std::string::npos) << text;
  }
  // Noticed, not waited out: the timeout is 60 s.
  EXPECT_LT(noticed_after, std::chrono::seconds(20));
  EXPECT_EQ(job_segments(job.port()), 0);
}

// The Gloo failure worker's scenarios, on shm.
gradwire::testing::LaunchedJob run_failure_worker(const std::string& mode, int ranks,
                                                  const std::string& timeout) {
  return gradwire::testing::launch_job(
      "shm_" + mode, {FAILURE_WORKER_PATH, mode}, ranks,
      {{"GRADWIRE_BACKEND", "shm"}, {"GRADWIRE_TIMEOUT", timeout}, {"OMP_NUM_THREADS", "1"}});
}

TEST(ShmPeerFailure, ExitedRankIsNamedOnEverySurvivor) {
  const auto job = run_failure_worker("die", 3, "20s");
  const auto& result = job.result;
  const auto& logs = job.logs;
  EXPECT_EQ(result.exit_code(), 0) << result.summary();
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(logs[r].find("CAUGHT PeerLostError"), std::string::npos) << logs[r];
    EXPECT_NE(logs[r].find("rank 2 (pid"), std::string::npos) << logs[r];
  }
  EXPECT_EQ(job_segments(result.master_port), 0);
}

TEST(ShmPeerFailure, StalledRankTimesOutNamingIt) {
  const auto job = run_failure_worker("stall", 2, "2s");
  const auto& result = job.result;
  const auto& logs = job.logs;
  EXPECT_EQ(result.workers.at(0).exit_code, 0) << logs[0];
  EXPECT_NE(logs[0].find("CAUGHT TimeoutError"), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find("timed out"), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find("over ranks [0, 1]"), std::string::npos) << logs[0];
  // The stuck rank is named (as a rank of the communicator, here the world).
  EXPECT_NE(logs[0].find("waiting for rank(s) [1]"), std::string::npos) << logs[0];
}

}  // namespace
