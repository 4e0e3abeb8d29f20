// Desync reports with real processes on loopback, on Gloo and on shm: a rank stopped with SIGSTOP
// is named, with its last collective, in the survivors' TimeoutError; a rank that calls a
// different collective is named with both operations; a stopped store host cannot hang the
// error path. Every process started here is killed and reaped before the test ends.
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

// A job of `ranks` desync_worker processes in `mode` on `backend`, on a free loopback port.
class Job {
 public:
  Job(const std::string& backend, const std::string& mode, int ranks)
      : dir_(fs::temp_directory_path() /
             ("gradwire_desync_" + backend + "_" + mode + "_" + std::to_string(getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const int port = gradwire::launch::pick_free_port();
    for (int r = 0; r < ranks; ++r) pids_.push_back(start(r, ranks, port, backend, mode));
  }
  ~Job() {
    for (pid_t pid : pids_) {
      if (pid > 0 && kill(pid, SIGKILL) == 0) waitpid(pid, nullptr, 0);
    }
    fs::remove_all(dir_);
  }

  pid_t pid(int rank) const { return pids_.at(rank); }
  std::string log(int rank) const { return read_file(dir_ / ("rank_" + std::to_string(rank))); }

  // Waits until rank's output contains `text`; false at the deadline.
  bool wait_for_output(int rank, const std::string& text, std::chrono::seconds limit) const {
    const auto deadline = Clock::now() + limit;
    while (log(rank).find(text) == std::string::npos) {
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  // Waits for rank's exit; its exit status, or -1 at the deadline.
  int wait_exit(int rank, std::chrono::seconds limit) {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      int status = 0;
      if (waitpid(pids_.at(rank), &status, WNOHANG) == pids_.at(rank)) {
        pids_.at(rank) = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  pid_t start(int rank, int ranks, int port, const std::string& backend, const std::string& mode) {
    std::vector<std::string> env{"RANK=" + std::to_string(rank),
                                 "WORLD_SIZE=" + std::to_string(ranks),
                                 "LOCAL_RANK=" + std::to_string(rank),
                                 "LOCAL_WORLD_SIZE=" + std::to_string(ranks),
                                 "MASTER_ADDR=127.0.0.1",
                                 "MASTER_PORT=" + std::to_string(port),
                                 "GRADWIRE_BACKEND=" + backend,
                                 "GRADWIRE_TIMEOUT=2s",
                                 "OMP_NUM_THREADS=1"};
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string log = (dir_ / ("rank_" + std::to_string(rank))).string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::string program = DESYNC_WORKER_PATH;
    std::string mode_arg = mode;
    char* argv[] = {program.data(), mode_arg.data(), nullptr};
    pid_t pid = -1;
    if (posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, envp.data()) != 0) pid = -1;
    posix_spawn_file_actions_destroy(&actions);
    return pid;
  }

  fs::path dir_;
  std::vector<pid_t> pids_;
};

class Desync : public ::testing::TestWithParam<std::string> {};

TEST_P(Desync, StoppedRankIsNamedWithItsLastCollective) {
  Job job(GetParam(), "stop", 2);
  ASSERT_TRUE(job.wait_for_output(1, "READY", std::chrono::seconds(60))) << job.log(1);
  ASSERT_EQ(kill(job.pid(1), SIGSTOP), 0);
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
  Job job(GetParam(), "stop-inside", 2);
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
  Job job(GetParam(), "broadcast", 2);
  const pid_t pid1 = job.pid(1);
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
  Job job(GetParam(), "allgather", 2);
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
  Job job(GetParam(), "stop-host", 2);
  ASSERT_TRUE(job.wait_for_output(0, "READY", std::chrono::seconds(60))) << job.log(0);
  ASSERT_EQ(kill(job.pid(0), SIGSTOP), 0);
  // 2 s timeout, then at most about 2 s reading the board: far below 30 s.
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
