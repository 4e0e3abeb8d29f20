// Unit tests of LaunchResult::exit_code() and summary().
#include <gtest/gtest.h>
#include <signal.h>

#include "gradwire/launch/launcher.h"
#include "test_support.h"

namespace gradwire::launch {
namespace {

WorkerExit worker(int rank, int code, int signal = 0, bool stopped = false) {
  WorkerExit exit;
  exit.rank = rank;
  exit.local_rank = rank;
  exit.pid = 1000 + rank;
  exit.exit_code = code;
  exit.signal = signal;
  exit.stopped_by_launcher = stopped;
  return exit;
}

ServerExit server(int index, int code, int signal = 0, bool stopped = true) {
  ServerExit exit;
  exit.index = index;
  exit.address = "127.0.0.1:" + std::to_string(7000 + index);
  exit.pid = 2000 + index;
  exit.exit_code = code;
  exit.signal = signal;
  exit.stopped_by_launcher = stopped;
  return exit;
}

using testing::contains;

TEST(LaunchResultTest, AllSucceededIsZeroAndSilent) {
  LaunchResult result;
  result.workers = {worker(0, 0), worker(1, 0)};
  EXPECT_EQ(result.exit_code(), 0);
  EXPECT_EQ(result.summary(), "");
}

TEST(LaunchResultTest, FailedRankNamesCodeAndStoppedRanks) {
  LaunchResult result;
  result.workers = {worker(0, 0, SIGTERM, true), worker(1, 3), worker(2, 0, SIGKILL, true)};
  result.first_failed_local_rank = 1;
  EXPECT_EQ(result.exit_code(), 3);
  const std::string summary = result.summary();
  EXPECT_TRUE(contains(summary, "gradwire-run: rank 1 (local 1, pid 1001) exited with code 3"))
      << summary;
  EXPECT_TRUE(contains(
      summary, "rank 0 (local 0, pid 1000) was stopped by gradwire-run after rank 1 failed"))
      << summary;
  EXPECT_TRUE(contains(summary, "killed by signal 9 (SIGKILL)")) << summary;
}

TEST(LaunchResultTest, SignalledWorkerGives128PlusSignal) {
  LaunchResult result;
  result.workers = {worker(0, 0, SIGSEGV)};
  result.first_failed_local_rank = 0;
  EXPECT_EQ(result.exit_code(), 128 + SIGSEGV);
  EXPECT_TRUE(contains(result.summary(), "killed by signal 11 (SIGSEGV)")) << result.summary();
}

TEST(LaunchResultTest, ReceivedSignalDecidesWhenNoWorkerFailedOnItsOwn) {
  LaunchResult result;
  result.workers = {worker(0, 0, SIGTERM, true), worker(1, 0, 0, true)};
  result.received_signal = SIGTERM;
  EXPECT_EQ(result.exit_code(), 128 + SIGTERM);
  const std::string summary = result.summary();
  EXPECT_TRUE(contains(summary, "received SIGTERM")) << summary;
  EXPECT_TRUE(contains(summary, "after receiving SIGTERM")) << summary;
}

TEST(LaunchResultTest, ServersStoppedAtTheEndAreFineWhateverTheirStatus) {
  LaunchResult result;
  result.workers = {worker(0, 0), worker(1, 0)};
  result.servers = {server(0, 143), server(1, 0, SIGKILL)};
  EXPECT_EQ(result.exit_code(), 0);
  EXPECT_EQ(result.summary(), "");
}

TEST(LaunchResultTest, FailedServerDecidesWhenNoTrainerFailed) {
  LaunchResult result;
  result.workers = {worker(0, 0, SIGTERM, true)};
  result.servers = {server(0, 0), server(1, 0, SIGSEGV, false)};
  result.first_failed_server = 1;
  EXPECT_EQ(result.exit_code(), 128 + SIGSEGV);
  const std::string summary = result.summary();
  EXPECT_TRUE(contains(summary,
                       "gradwire-run: server 1 (127.0.0.1:7001, pid 2001) killed by "
                       "signal 11 (SIGSEGV) while the trainers ran"))
      << summary;
  EXPECT_TRUE(contains(summary,
                       "rank 0 (local 0, pid 1000) was stopped by gradwire-run after "
                       "server 1 failed"))
      << summary;
  EXPECT_TRUE(contains(summary,
                       "server 0 (127.0.0.1:7000, pid 2000) was stopped by gradwire-run "
                       "after server 1 failed (exited with code 0)"))
      << summary;

  // A server that exited 0 on its own still fails the launch.
  result.servers[1] = server(1, 0, 0, false);
  EXPECT_EQ(result.exit_code(), 1);
}

TEST(LaunchResultTest, FailedTrainerDecidesOverServers) {
  LaunchResult result;
  result.workers = {worker(0, 5), worker(1, 0, SIGTERM, true)};
  result.servers = {server(0, 0)};
  result.first_failed_local_rank = 0;
  EXPECT_EQ(result.exit_code(), 5);
  EXPECT_TRUE(contains(result.summary(),
                       "server 0 (127.0.0.1:7000, pid 2000) was stopped by "
                       "gradwire-run after rank 0 failed"))
      << result.summary();
}

TEST(LaunchResultTest, AttemptEndedByAServerNamesIt) {
  LaunchResult result;
  RestartedAttempt attempt;
  attempt.master_port = 41235;
  attempt.workers = {worker(0, 0, SIGTERM, true), worker(1, 0, SIGTERM, true)};
  attempt.failed_server = server(1, 0, SIGKILL, false);
  result.restarted_attempts = {attempt};
  result.master_port = 38117;
  result.workers = {worker(0, 0), worker(1, 0)};
  result.servers = {server(0, 0), server(1, 0)};
  EXPECT_EQ(result.exit_code(), 0);
  EXPECT_EQ(result.summary(),
            "gradwire-run: attempt 1 (MASTER_PORT 41235) failed: server 1 (127.0.0.1:7001, pid "
            "2001) killed by signal 9 (SIGKILL) while the trainers ran; the server and the "
            "workers were restarted\n"
            "gradwire-run: attempt 2 (MASTER_PORT 38117, the last) succeeded\n");
}

}  // namespace
}  // namespace gradwire::launch
