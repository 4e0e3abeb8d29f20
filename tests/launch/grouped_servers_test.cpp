// run_workers with several parameter servers per process (LaunchOptions::server_processes, or
// the automatic choice on a launcher with few CPUs), using the fake server of
// fake_ps_server.cpp (which, like gradwire-ps-server, hosts one server per --listen) and /bin/sh
// trainers: the processes and their argv, GRADWIRE_PS_ADDRS, prefixes and log files, a grouped
// process failing before it is ready or killed while the trainers run (ending the launch, or
// started again with all its servers on the same addresses), and no process left behind.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <regex>
#include <set>

#include "gradwire/common/error.h"
#include "gradwire/common/files.h"
#include "gradwire/launch/launcher.h"
#include "servers_fixture.h"
#include "test_support.h"

namespace gradwire::launch {
// Named after the file: the unity build puts several test files in one translation unit.
namespace grouped_servers_test {

using namespace std::chrono_literals;
using gradwire::UniqueFd;
using testing::contains;
using testing::read_file;
using testing::TempDir;

// Sends "hello from rank R" to every server (one attempt each: fails unless all listen already)
// and prints the addresses the trainer got.
const std::string kGreetServers =
    "\"$FAKE\" --send \"$GRADWIRE_PS_ADDRS\" \"hello from rank $RANK\" || exit 9; "
    "echo \"addrs=$GRADWIRE_PS_ADDRS\"";

// On attempts before ATTEMPTS, rank 0 makes the server at position VICTIM of GRADWIRE_PS_ADDRS
// (1-based) SIGKILL its process and both ranks wait to be stopped; later attempts greet every
// server and exit 0. Each attempt appends "RESTART_COUNT PS_ADDRS" to DIR/env$RANK.
const std::string kKillOneServer =
    "echo \"$TORCHELASTIC_RESTART_COUNT $GRADWIRE_PS_ADDRS\" >> \"$DIR/env$RANK\"; "
    "if [ \"$TORCHELASTIC_RESTART_COUNT\" -lt \"$ATTEMPTS\" ]; then "
    "if [ \"$RANK\" = 0 ]; then "
    "\"$FAKE\" --send \"$(echo $GRADWIRE_PS_ADDRS | cut -d, -f$VICTIM)\" kill; fi; "
    "exec sleep 30; fi; " +
    kGreetServers;

// "a, b, c": how messages list the addresses of a server process.
std::string listed(const std::vector<std::string>& addresses) {
  std::string text;
  for (const std::string& address : addresses) text += (text.empty() ? "" : ", ") + address;
  return text;
}

std::string joined(const std::vector<ServerExit>& servers) {
  std::string text;
  for (const ServerExit& server : servers) {
    for (const std::string& address : server.addresses) {
      text += (text.empty() ? "" : ",") + address;
    }
  }
  return text;
}

// Binds the calling thread to its first allowed CPU while alive: run_workers then sees a
// launcher with one CPU (the automatic choice reads the calling thread's mask).
class OneCpu {
 public:
  OneCpu() {
    CPU_ZERO(&original_);
    if (::sched_getaffinity(0, sizeof(original_), &original_) != 0) return;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &original_)) continue;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      bound_ = ::sched_setaffinity(0, sizeof(one), &one) == 0;
      return;
    }
  }
  ~OneCpu() {
    if (bound_) ::sched_setaffinity(0, sizeof(original_), &original_);
  }
  OneCpu(const OneCpu&) = delete;
  OneCpu& operator=(const OneCpu&) = delete;
  bool bound() const { return bound_; }

 private:
  cpu_set_t original_;
  bool bound_ = false;
};

class GroupedServersTest : public testing::ServersFixture {
 protected:
  // `servers` fake servers in `processes` processes (0: automatic); see server_options. Signals
  // are not forwarded.
  LaunchOptions options_for(const std::string& script, int nproc, int servers, int processes,
                            const std::vector<std::string>& server_args = {}) {
    LaunchOptions options = server_options(script, nproc, servers, processes, server_args);
    options.forward_signals = false;
    return options;
  }

  // The pids the process labelled `label` ("servers 2-3") printed, one per start, oldest first;
  // remembered for cleanup.
  std::vector<pid_t> printed_pids(const std::string& label) {
    std::vector<pid_t> pids;
    const std::string text = out();
    const std::regex pid_line("\\[" + label + "\\] pid=(\\d+)");
    for (std::sregex_iterator it(text.begin(), text.end(), pid_line), end; it != end; ++it) {
      pids.push_back(std::stoi((*it)[1]));
    }
    spawned_.insert(spawned_.end(), pids.begin(), pids.end());
    return pids;
  }

  // Every process of `result` and every server process printed under `labels` is gone.
  void expect_all_gone(const LaunchResult& result, const std::vector<std::string>& labels) {
    std::vector<pid_t> pids;
    for (const WorkerExit& worker : result.workers) pids.push_back(worker.pid);
    for (const ServerExit& server : result.servers) pids.push_back(server.pid);
    for (const std::string& label : labels) {
      for (pid_t pid : printed_pids(label)) pids.push_back(pid);
    }
    spawned_.insert(spawned_.end(), pids.begin(), pids.end());
    for (pid_t pid : pids) EXPECT_TRUE(testing::process_gone(pid)) << "process " << pid;
  }

};

TEST_F(GroupedServersTest, FourServersInTwoProcesses) {
  LaunchOptions options = options_for(kGreetServers, 2, 4, 2, {"--listen-after-ms", "200"});
  options.log_dir = dir_.file("logs");
  const LaunchResult result = run_workers(options);
  ASSERT_EQ(result.exit_code(), 0) << result.summary() << out() << err();
  EXPECT_EQ(result.summary(), "");

  ASSERT_EQ(result.servers.size(), 2u);  // two processes
  EXPECT_NE(result.servers[0].pid, result.servers[1].pid);
  std::set<std::string> distinct;
  const std::string text = out();
  for (int process = 0; process < 2; ++process) {
    const ServerExit& server = result.servers[process];
    const std::string label = process == 0 ? "servers 0-1" : "servers 2-3";
    EXPECT_EQ(server.index, process);
    EXPECT_EQ(server.server_indices, (std::vector<int>{2 * process, 2 * process + 1}));
    ASSERT_EQ(server.addresses.size(), 2u);
    EXPECT_EQ(server.address, server.addresses[0]);
    EXPECT_TRUE(server.stopped_by_launcher);
    EXPECT_FALSE(server.failed());
    distinct.insert(server.addresses.begin(), server.addresses.end());
    // One argv with a --listen per server, one "listening on" line per server, one pid.
    const std::string prefix = "[" + label + "] ";
    EXPECT_TRUE(contains(text, prefix + "args: --listen-after-ms 200 --listen " +
                                   server.addresses[0] + " --listen " + server.addresses[1] + "\n"))
        << text;
    EXPECT_EQ(printed_pids(label), std::vector<pid_t>{server.pid}) << text;
    const std::string log = read_file(
        dir_.file("logs/" + std::string(process == 0 ? "servers_0-1.log" : "servers_2-3.log")));
    for (const std::string& address : server.addresses) {
      EXPECT_TRUE(contains(text, prefix + "gradwire-ps-server listening on " + address)) << text;
      EXPECT_TRUE(contains(log, "gradwire-ps-server listening on " + address)) << log;
    }
    for (const std::string rank : {"0", "1"}) {
      EXPECT_TRUE(contains(text, prefix + "received: hello from rank " + rank)) << text;
    }
  }
  EXPECT_EQ(distinct.size(), 4u);
  EXPECT_FALSE(contains(text, "[server ")) << text;
  EXPECT_EQ(read_file(dir_.file("logs/server_0.log")), "");
  // Every trainer got the four addresses in server order, all reachable (the greeting).
  const std::string ps_addrs = joined(result.servers);
  EXPECT_TRUE(contains(text, "[rank 0] addrs=" + ps_addrs + "\n")) << text;
  EXPECT_TRUE(contains(text, "[rank 1] addrs=" + ps_addrs + "\n")) << text;
  expect_all_gone(result, {"servers 0-1", "servers 2-3"});
}

TEST_F(GroupedServersTest, KilledProcessEndsTheLaunchNamingItsServers) {
  LaunchOptions options = options_for(kKillOneServer, 2, 4, 2);
  options.extra_env["ATTEMPTS"] = "1";
  options.extra_env["VICTIM"] = "4";  // server 3, in process 1 with server 2
  const LaunchResult result = run_workers(options);
  EXPECT_EQ(result.exit_code(), 128 + SIGKILL) << result.summary() << out() << err();
  ASSERT_EQ(result.servers.size(), 2u);
  EXPECT_EQ(result.first_failed_server, 1);
  EXPECT_EQ(result.first_failed_local_rank, -1);
  const ServerExit& killed = result.servers[1];
  EXPECT_EQ(killed.signal, SIGKILL);
  EXPECT_FALSE(killed.stopped_by_launcher);
  EXPECT_TRUE(result.servers[0].stopped_by_launcher);
  for (const WorkerExit& worker : result.workers) EXPECT_TRUE(worker.stopped_by_launcher);
  const std::string summary = result.summary();
  EXPECT_TRUE(
      contains(summary, "gradwire-run: server process 1 (servers 2-3: " + listed(killed.addresses) +
                            ", pid " + std::to_string(killed.pid) +
                            ") killed by signal 9 (SIGKILL) while the trainers ran\n"))
      << summary;
  EXPECT_TRUE(contains(summary, "was stopped by gradwire-run after server process 1 failed"))
      << summary;
  EXPECT_EQ(printed_pids("servers 2-3").size(), 1u);  // not started again
  expect_all_gone(result, {"servers 0-1", "servers 2-3"});
}

TEST_F(GroupedServersTest, KilledProcessIsRestartedWithAllItsServers) {
  LaunchOptions options = options_for(kKillOneServer, 2, 4, 2);
  options.max_restarts = 1;
  options.log_dir = dir_.file("logs");
  options.extra_env["ATTEMPTS"] = "1";
  options.extra_env["VICTIM"] = "4";
  const LaunchResult result = run_workers(options);
  ASSERT_EQ(result.exit_code(), 0) << result.summary() << out() << err();

  ASSERT_EQ(result.restarted_attempts.size(), 1u);
  const RestartedAttempt& first = result.restarted_attempts[0];
  ASSERT_TRUE(first.failed_server.has_value());
  const ServerExit& killed = *first.failed_server;
  EXPECT_EQ(killed.index, 1);
  EXPECT_EQ(killed.server_indices, (std::vector<int>{2, 3}));
  EXPECT_EQ(killed.signal, SIGKILL);
  EXPECT_TRUE(first.also_failed_servers.empty());

  // The whole process again (both servers, same addresses), a new pid; process 0 is the same.
  ASSERT_EQ(result.servers.size(), 2u);
  EXPECT_EQ(result.servers[1].addresses, killed.addresses);
  EXPECT_NE(result.servers[1].pid, killed.pid);
  EXPECT_EQ(printed_pids("servers 2-3"), (std::vector<pid_t>{killed.pid, result.servers[1].pid}));
  EXPECT_EQ(printed_pids("servers 0-1"), std::vector<pid_t>{result.servers[0].pid});
  const std::string args =
      "[servers 2-3] args: --listen " + killed.addresses[0] + " --listen " + killed.addresses[1];
  const std::string text = out();
  EXPECT_NE(text.find(args), text.rfind(args)) << "started once only:\n" << text;
  for (const std::string rank : {"0", "1"}) {
    EXPECT_TRUE(contains(text, "[servers 2-3] received: hello from rank " + rank)) << text;
  }
  const std::string log = read_file(dir_.file("logs/servers_2-3.log"));
  EXPECT_TRUE(contains(log, "pid=" + std::to_string(killed.pid) + "\n")) << log;
  EXPECT_TRUE(contains(log, "pid=" + std::to_string(result.servers[1].pid) + "\n")) << log;

  // Same GRADWIRE_PS_ADDRS on both attempts.
  const std::vector<std::string> lines = testing::split_lines(read_file(dir_.file("env0")));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "0 " + joined(result.servers));
  EXPECT_EQ(lines[1], "1 " + joined(result.servers));

  const std::string named = "server process 1 (servers 2-3: " + listed(killed.addresses) +
                            ", pid " + std::to_string(killed.pid) + ")";
  EXPECT_TRUE(contains(err(), "gradwire-run: " + named +
                                  " killed by signal 9 (SIGKILL) while the trainers ran; "
                                  "restarting it and the workers (restart 1 of 1)\n"))
      << err();
  EXPECT_TRUE(contains(result.summary(), "failed: " + named +
                                             " killed by signal 9 (SIGKILL) while the trainers "
                                             "ran; the servers and the workers were restarted\n"))
      << result.summary();
  expect_all_gone(result, {"servers 0-1", "servers 2-3"});
}

TEST_F(GroupedServersTest, ProcessExitingBeforeReadyNamesAllItsServers) {
  const LaunchOptions options =
      options_for("echo ran > \"$DIR/trainer_ran\"", 1, 3, 1, {"--mode", "exit-at-once"});
  try {
    run_workers(options);
    FAIL() << "expected PeerLostError";
  } catch (const PeerLostError& error) {
    const std::string message = error.what();
    EXPECT_TRUE(std::regex_search(
        message,
        std::regex(R"(server process 0 \(servers 0-2: (127\.0\.0\.1:\d+), (127\.0\.0\.1:\d+), )"
                   R"((127\.0\.0\.1:\d+), pid \d+, command: \S+ --mode exit-at-once --listen \1 )"
                   R"(--listen \2 --listen \3\) exited with code 1 before accepting connections)")))
        << message;
    EXPECT_TRUE(contains(message, "(prefixed [servers 0-2])")) << message;
  }
  EXPECT_TRUE(contains(err(), "[servers 0-2] fake server: failing at once")) << err();
  EXPECT_EQ(read_file(dir_.file("trainer_ran")), "");
}

TEST_F(GroupedServersTest, ProcessThatNeverListensTimesOutNamingTheAddress) {
  LaunchOptions options =
      options_for("echo ran > \"$DIR/trainer_ran\"", 1, 2, 1, {"--mode", "never-listen"});
  options.server_ready_timeout = 500ms;
  try {
    run_workers(options);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& error) {
    const std::string message = error.what();
    EXPECT_TRUE(std::regex_search(
        message, std::regex(R"(server process 0 \(servers 0-1: (127\.0\.0\.1:\d+), \S+, pid \d+, )"
                            R"(command: .*\) did not accept connections on \1 within 500 ms)")))
        << message;
  }
  EXPECT_EQ(read_file(dir_.file("trainer_ran")), "");
  const std::vector<pid_t> pids = printed_pids("servers 0-1");
  ASSERT_EQ(pids.size(), 1u) << out();
  EXPECT_TRUE(testing::process_gone(pids[0]));
}

TEST_F(GroupedServersTest, AutomaticModeGroupsWhenTheLauncherHasFewCpus) {
  // One CPU for 1 trainer + 3 servers: one process hosts all three.
  LaunchOptions options = options_for(kGreetServers, 1, 3, 0);
  LaunchResult result;
  {
    OneCpu one_cpu;
    ASSERT_TRUE(one_cpu.bound());
    result = run_workers(options);
  }
  ASSERT_EQ(result.exit_code(), 0) << result.summary() << out() << err();
  ASSERT_EQ(result.servers.size(), 1u);
  EXPECT_EQ(result.servers[0].server_indices, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(contains(out(), "[rank 0] addrs=" + joined(result.servers) + "\n")) << out();
  EXPECT_TRUE(contains(out(), "[servers 0-2] received: hello from rank 0")) << out();
  expect_all_gone(result, {"servers 0-2"});
}

}  // namespace grouped_servers_test
}  // namespace gradwire::launch
