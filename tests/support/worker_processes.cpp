#include "worker_processes.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace gradwire::testing {

namespace fs = std::filesystem;

namespace {

std::string log_dir(const std::string& name) {
  return (fs::temp_directory_path() / ("gradwire_" + name + "_" + std::to_string(getpid())))
      .string();
}

std::string log_path(const std::string& dir, int rank) {
  return dir + "/rank_" + std::to_string(rank) + ".log";
}

// Starts rank `rank` of `options`' job on `port`, its output in `log`; -1 when it cannot be.
pid_t spawn_rank(const WorkerJobOptions& options, int rank, int port, const std::string& log) {
  std::vector<std::string> env{"RANK=" + std::to_string(rank),
                               "WORLD_SIZE=" + std::to_string(options.ranks),
                               "LOCAL_RANK=" + std::to_string(rank),
                               "LOCAL_WORLD_SIZE=" + std::to_string(options.ranks),
                               "MASTER_ADDR=127.0.0.1",
                               "MASTER_PORT=" + std::to_string(port)};
  for (const auto& [key, value] : options.env) env.push_back(key + "=" + value);
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args{options.program};
  args.insert(args.end(), options.args.begin(), options.args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  if (posix_spawn(&pid, options.program.c_str(), &actions, nullptr, argv.data(), envp.data()) !=
      0) {
    pid = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

}  // namespace

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

WorkerJob::WorkerJob(WorkerJobOptions options)
    : dir_(log_dir(options.name)), port_(launch::pick_free_port()) {
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  for (int rank = 0; rank < options.ranks; ++rank) {
    const pid_t pid = spawn_rank(options, rank, port_, log_path(dir_, rank));
    if (pid <= 0) {
      kill_unreaped();
      fs::remove_all(dir_);
      throw std::runtime_error("cannot start " + options.program + " as rank " +
                               std::to_string(rank));
    }
    pids_.push_back(pid);
    reaped_.push_back(false);
  }
}

WorkerJob::~WorkerJob() {
  kill_unreaped();
  fs::remove_all(dir_);
}

void WorkerJob::kill_unreaped() {
  for (size_t r = 0; r < pids_.size(); ++r) {
    if (!reaped_[r] && kill(pids_[r], SIGKILL) == 0) waitpid(pids_[r], nullptr, 0);
    reaped_[r] = true;
  }
}

std::string WorkerJob::log(int rank) const { return read_file(log_path(dir_, rank)); }

bool WorkerJob::wait_for_output(int rank, const std::string& text,
                                std::chrono::milliseconds limit) const {
  const auto deadline = Clock::now() + limit;
  while (log(rank).find(text) == std::string::npos) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

int WorkerJob::wait_exit(int rank, Clock::time_point deadline) {
  const pid_t pid = pids_.at(rank);
  while (!reaped_.at(rank) && Clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      reaped_[rank] = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

LaunchedJob launch_job(const std::string& name, const std::vector<std::string>& command, int ranks,
                       const std::map<std::string, std::string>& env) {
  const std::string dir = log_dir(name);
  fs::remove_all(dir);
  launch::LaunchOptions options;
  options.nproc_per_node = ranks;
  options.command = command;
  options.log_dir = dir;
  options.forward_signals = false;
  options.extra_env = env;
  const auto start = std::chrono::steady_clock::now();
  LaunchedJob job{launch::run_workers(options), {}, {}};
  job.took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  for (int r = 0; r < ranks; ++r) job.logs.push_back(read_file(log_path(dir, r)));
  fs::remove_all(dir);
  return job;
}

}  // namespace gradwire::testing
