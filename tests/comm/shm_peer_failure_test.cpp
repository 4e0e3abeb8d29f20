// The shm backend with real processes: a peer SIGKILLed in the middle of a collective is named by
// every survivor in a PeerLostError long before the timeout, and the job leaves nothing in
// /dev/shm, neither once attached nor after the kill; the existing failure worker's dead and
// stalled peers give PeerLostError and TimeoutError on shm as on Gloo.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gradwire/launch/launcher.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int job_segments(int port) {
  const std::string prefix = "gradwire-" + std::to_string(port) + "-";
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/dev/shm")) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) ++count;
  }
  return count;
}

// Starts rank `rank` of a `ranks`-rank shm job on `port`, its output in `log`.
pid_t start_rank(int rank, int ranks, int port, const fs::path& log) {
  std::vector<std::string> env{"RANK=" + std::to_string(rank),
                               "WORLD_SIZE=" + std::to_string(ranks),
                               "LOCAL_RANK=" + std::to_string(rank),
                               "LOCAL_WORLD_SIZE=" + std::to_string(ranks),
                               "MASTER_ADDR=127.0.0.1",
                               "MASTER_PORT=" + std::to_string(port),
                               "GRADWIRE_BACKEND=shm",
                               "GRADWIRE_TIMEOUT=60s",
                               "OMP_NUM_THREADS=1"};
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::string program = SHM_FAILURE_WORKER_PATH;
  char* argv[] = {program.data(), nullptr};
  pid_t pid = 0;
  const int error = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return error == 0 ? pid : -1;
}

// Polls for the exit of `pid` until `deadline`; the exit status, or -1 on timeout.
int wait_exit(pid_t pid, Clock::time_point deadline) {
  while (Clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

TEST(ShmPeerFailure, SigkilledRankIsNamedAndNothingStaysInDevShm) {
  const int ranks = 3, victim = 2;
  const int port = gradwire::launch::pick_free_port();
  const fs::path dir =
      fs::temp_directory_path() / ("gradwire_shm_kill_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    pids.push_back(start_rank(r, ranks, port, dir / ("rank_" + std::to_string(r) + ".log")));
    ASSERT_GT(pids.back(), 0);
  }
  auto log = [&](int r) { return read_file(dir / ("rank_" + std::to_string(r) + ".log")); };
  // Every rank attached and is busy allreducing 16 MiB tensors.
  const auto ready_deadline = Clock::now() + std::chrono::seconds(60);
  for (int r = 0; r < ranks; ++r) {
    while (log(r).find("READY") == std::string::npos && Clock::now() < ready_deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(pids[victim], SIGKILL);
  const auto killed_at = Clock::now();
  EXPECT_EQ(wait_exit(pids[victim], killed_at + std::chrono::seconds(10)), 128);
  std::vector<int> codes;
  for (int r = 0; r < ranks; ++r) {
    if (r != victim) codes.push_back(wait_exit(pids[r], killed_at + std::chrono::seconds(40)));
  }
  const auto noticed_after = Clock::now() - killed_at;
  for (pid_t pid : pids) {
    if (kill(pid, SIGKILL) == 0) waitpid(pid, nullptr, 0);  // only when a test above failed
  }
  for (int r = 0; r < ranks; ++r) {
    const auto text = log(r);
    EXPECT_NE(text.find("BACKEND shm"), std::string::npos) << text;
    EXPECT_NE(text.find("SEGMENTS 0"), std::string::npos) << "rank " << r << ": " << text;
    if (r == victim) continue;
    EXPECT_EQ(codes[r], 0) << text;
    EXPECT_NE(text.find("CAUGHT PeerLostError"), std::string::npos) << text;
    EXPECT_NE(text.find("allreduce(sum) of 4194304 Float elements over ranks [0, 1, 2]"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("rank 2 (pid " + std::to_string(pids[victim])), std::string::npos) << text;
    EXPECT_NE(text.find("no longer running"), std::string::npos) << text;
  }
  // Noticed, not waited out: the timeout is 60 s.
  EXPECT_LT(noticed_after, std::chrono::seconds(20));
  EXPECT_EQ(job_segments(port), 0);
  fs::remove_all(dir);
}

// The Gloo failure worker's scenarios, on shm.
gradwire::launch::LaunchResult run_failure_worker(const std::string& mode, int ranks,
                                                  const std::string& timeout,
                                                  std::vector<std::string>& logs) {
  const fs::path dir =
      fs::temp_directory_path() / ("gradwire_shm_" + mode + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  gradwire::launch::LaunchOptions options;
  options.nproc_per_node = ranks;
  options.command = {FAILURE_WORKER_PATH, mode};
  options.log_dir = dir.string();
  options.forward_signals = false;
  options.extra_env["GRADWIRE_BACKEND"] = "shm";
  options.extra_env["GRADWIRE_TIMEOUT"] = timeout;
  options.extra_env["OMP_NUM_THREADS"] = "1";
  auto result = gradwire::launch::run_workers(options);
  for (int r = 0; r < ranks; ++r)
    logs.push_back(read_file(dir / ("rank_" + std::to_string(r) + ".log")));
  fs::remove_all(dir);
  return result;
}

TEST(ShmPeerFailure, ExitedRankIsNamedOnEverySurvivor) {
  std::vector<std::string> logs;
  auto result = run_failure_worker("die", 3, "20s", logs);
  EXPECT_EQ(result.exit_code(), 0) << result.summary();
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(logs[r].find("CAUGHT PeerLostError"), std::string::npos) << logs[r];
    EXPECT_NE(logs[r].find("rank 2 (pid"), std::string::npos) << logs[r];
  }
  EXPECT_EQ(job_segments(result.master_port), 0);
}

TEST(ShmPeerFailure, StalledRankTimesOutNamingIt) {
  std::vector<std::string> logs;
  auto result = run_failure_worker("stall", 2, "2s", logs);
  EXPECT_EQ(result.workers.at(0).exit_code, 0) << logs[0];
  EXPECT_NE(logs[0].find("CAUGHT TimeoutError"), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find("timed out"), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find("over ranks [0, 1]"), std::string::npos) << logs[0];
  // The stuck rank is named (as a rank of the communicator, here the world).
  EXPECT_NE(logs[0].find("waiting for rank(s) [1]"), std::string::npos) << logs[0];
}

}  // namespace
