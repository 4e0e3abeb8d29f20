// Two simulated hosts on this machine: two gradwire-run launchers (--nnodes 2, --node-rank 0 and
// 1, one master port), each starting 2 workers, with GRADWIRE_HOST_ID overridden per launcher.
// Real processes; every launcher is waited for with a deadline and stopped when it passes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "gradwire/launch/launcher.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Starts `args` with this process's environment plus `overrides` (an empty value unsets), its
// output (stdout and stderr) into `output`.
pid_t spawn(const std::vector<std::string>& args,
            const std::map<std::string, std::string>& overrides, const fs::path& output) {
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    if (overrides.count(entry.substr(0, entry.find('='))) == 0) env_text.push_back(entry);
  }
  for (const auto& [name, value] : overrides) {
    if (!value.empty()) env_text.push_back(name + "=" + value);
  }
  std::vector<char*> envp, argv;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args_copy = args;
  for (auto& a : args_copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// Waits for `pid` until `deadline`; then SIGTERM (the launcher stops its workers), and SIGKILL
// 10 s later. Returns the wait status, or -1 when it had to be stopped.
int wait_with_deadline(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(20ms);
  }
  kill(pid, SIGTERM);
  for (int i = 0; i < 500; ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) return -1;
    std::this_thread::sleep_for(20ms);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

struct TwoNodes {
  std::string outputs[2];
  int statuses[2];
};

// Node k runs with host_ids[k] (empty: this machine's real identity) and `env` besides.
TwoNodes run_two_nodes(const std::string& mode, const std::string host_ids[2],
                       const std::map<std::string, std::string>& env) {
  const fs::path dir = fs::temp_directory_path() /
                       ("gradwire_hierarchical_launch_" + mode + "_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const int port = gradwire::launch::pick_free_port("127.0.0.1");
  pid_t pids[2];
  for (int node = 0; node < 2; ++node) {
    auto overrides = env;
    overrides["GRADWIRE_HOST_ID"] = host_ids[node];
    overrides["GRADWIRE_TIMEOUT"] = "20s";
    overrides["OMP_NUM_THREADS"] = "1";
    pids[node] = spawn({GRADWIRE_RUN_PATH, "--nnodes", "2", "--node-rank", std::to_string(node),
                        "--master-addr", "127.0.0.1", "--master-port", std::to_string(port), "-n",
                        "2", "--grace-period", "1s", HIERARCHICAL_WORKER_PATH, mode},
                       overrides, dir / ("node" + std::to_string(node) + ".log"));
  }
  TwoNodes result{};
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (int node = 0; node < 2; ++node) {
    result.statuses[node] = pids[node] > 0 ? wait_with_deadline(pids[node], deadline) : -1;
    result.outputs[node] = read_file(dir / ("node" + std::to_string(node) + ".log"));
  }
  fs::remove_all(dir);
  // Segments are unlinked once attached: nothing of the job stays in /dev/shm.
  const std::string ours = "gradwire-" + std::to_string(port) + "-";
  for (const auto& entry : fs::directory_iterator("/dev/shm")) {
    EXPECT_NE(entry.path().filename().string().rfind(ours, 0), 0u) << entry.path();
  }
  return result;
}

void expect_workers(const TwoNodes& run, const std::string& backend) {
  for (int node = 0; node < 2; ++node) {
    const auto& out = run.outputs[node];
    EXPECT_TRUE(WIFEXITED(run.statuses[node]) && WEXITSTATUS(run.statuses[node]) == 0)
        << "node " << node << " status " << run.statuses[node] << ":\n"
        << out;
    EXPECT_EQ(count(out, "BACKEND " + backend + "\n"), 2) << out;
    EXPECT_EQ(count(out, "WORKER OK"), 2) << out;
  }
}

TEST(HierarchicalLaunch, TwoSimulatedHostsPickHierarchical) {
  const std::string hosts[2] = {"a", "b"};
  expect_workers(run_two_nodes("store", hosts, {{"GRADWIRE_BACKEND", ""}}), "hierarchical");
}

TEST(HierarchicalLaunch, ForcedHierarchicalThroughInit) {
  const std::string hosts[2] = {"a", "b"};
  expect_workers(run_two_nodes("init", hosts, {{"GRADWIRE_BACKEND", "hierarchical"}}),
                 "hierarchical");
}

// Two launchers on one real host: LOCAL_WORLD_SIZE (2) differs from WORLD_SIZE (4), yet the
// identities say one host, so auto takes shm.
TEST(HierarchicalLaunch, TwoLaunchersOnOneHostPickShm) {
  const std::string hosts[2] = {"", ""};
  expect_workers(run_two_nodes("store", hosts, {{"GRADWIRE_BACKEND", ""}}), "shm");
}

}  // namespace
