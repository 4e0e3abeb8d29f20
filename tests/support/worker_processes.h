// Test support: the ranks of one job as real processes of a worker program on 127.0.0.1.
// WorkerJob starts them itself (posix_spawn, no launcher in between), so that a test can signal
// one rank and watch the others; launch_job() runs them through launch::run_workers and returns
// when all exited. Neither leaves a process or a log directory behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "gradwire/launch/launcher.h"

namespace gradwire::testing {

// The whole file; empty when it cannot be read.
std::string read_file(const std::string& path);

struct WorkerJobOptions {
  // The worker executable and its arguments (after the program name).
  std::string program;
  std::vector<std::string> args;
  // Ranks of the job. Default 2.
  int ranks = 2;
  // Every rank's environment besides RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR
  // and MASTER_PORT (all set here); these win over this process's environment. Default: none.
  std::map<std::string, std::string> env;
  // Names the log directory under the temporary directory. Default "job".
  std::string name = "job";
};

// A job of options.ranks worker processes on a free loopback port; rank r's stdout and stderr go
// to one log. Not thread safe: one test thread drives it.
class WorkerJob {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts every rank; throws std::runtime_error (after killing those started) if one cannot be.
  explicit WorkerJob(WorkerJobOptions options);
  // Kills (SIGKILL) and reaps every rank not reaped yet, removes the logs.
  ~WorkerJob();
  WorkerJob(const WorkerJob&) = delete;
  WorkerJob& operator=(const WorkerJob&) = delete;

  int port() const { return port_; }
  pid_t pid(int rank) const { return pids_.at(rank); }
  std::string log(int rank) const;

  // Polls rank's log until it contains `text`; false at the limit.
  bool wait_for_output(int rank, const std::string& text, std::chrono::milliseconds limit) const;
  // Polls for rank's exit until `deadline`: its exit status (128 + the signal when killed by
  // one), or -1 when it still runs then. Reaps it.
  int wait_exit(int rank, Clock::time_point deadline);
  int wait_exit(int rank, std::chrono::milliseconds limit) {
    return wait_exit(rank, Clock::now() + limit);
  }

 private:
  void kill_unreaped();

  std::string dir_;
  int port_ = 0;
  std::vector<pid_t> pids_;
  std::vector<bool> reaped_;
};

struct LaunchedJob {
  launch::LaunchResult result;
  std::vector<std::string> logs;  // rank r's output
  std::chrono::milliseconds took{0};
};

// Runs `command` as `ranks` workers of one job through launch::run_workers (signals not
// forwarded), with `env` added to their environment; blocks until they all exited. `name` names
// the log directory (removed before returning).
LaunchedJob launch_job(const std::string& name, const std::vector<std::string>& command, int ranks,
                       const std::map<std::string, std::string>& env);

}  // namespace gradwire::testing
