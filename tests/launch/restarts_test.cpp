// run_workers with LaunchOptions::max_restarts, using real /bin/sh workers: a group that fails
// is started again with the truthful TORCHELASTIC_* variables, a new rendezvous port (or the
// given one), the same job token; the limit is respected; servers stay up across restarts; a
// server that dies while the workers run is started again on its port, then the workers; the
// summary lists every attempt. Each worker records its environment in DIR/env<RANK>, one line
// per attempt.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <set>
#include <sstream>

#include "gradwire/common/files.h"
#include "gradwire/launch/launcher.h"
#include "test_support.h"

namespace gradwire::launch {
namespace {

using namespace std::chrono_literals;
using gradwire::UniqueFd;
using testing::contains;
using testing::read_file;
using testing::split_lines;
using testing::TempDir;

// Appends "RESTART_COUNT MAX_RESTARTS MASTER_PORT JOB_TOKEN RUN_ID PS_ADDRS" to DIR/env$RANK.
const std::string kRecordEnv =
    "echo \"$TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS $MASTER_PORT "
    "$GRADWIRE_JOB_TOKEN $TORCHELASTIC_RUN_ID x$GRADWIRE_PS_ADDRS\" >> \"$DIR/env$RANK\"; ";

// Rank 1 fails (exit 3) on its first attempt only (the marker file remembers), once rank 0 has
// recorded its environment (waiting at most 20 s); on that attempt rank 0 waits until stopped.
// Every later attempt succeeds.
const std::string kFailFirstAttempt =
    kRecordEnv +
    "if [ \"$RANK\" = 1 ] && [ ! -e \"$DIR/marker\" ]; then touch \"$DIR/marker\"; "
    "i=0; while [ ! -s \"$DIR/env0\" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; "
    "exit 3; fi; "
    "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then exec sleep 30; fi; exit 0";

// On attempts before ATTEMPTS (a variable of the script's environment), rank 0 makes server 1
// SIGKILL itself (the fake's "kill" line) once rank 1 has recorded its environment, and both
// ranks wait to be stopped; on later attempts both greet every server and exit 0.
const std::string kKillServerOne =
    kRecordEnv +
    "if [ \"$TORCHELASTIC_RESTART_COUNT\" -lt \"$ATTEMPTS\" ]; then "
    "if [ \"$RANK\" = 0 ]; then "
    "i=0; while [ ! -s \"$DIR/env1\" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; "
    "\"$FAKE\" --send \"$(echo $GRADWIRE_PS_ADDRS | cut -d, -f2)\" kill; fi; "
    "exec sleep 30; fi; "
    "\"$FAKE\" --send \"$GRADWIRE_PS_ADDRS\" \"again $RANK\"";

struct EnvLine {
  std::string restart_count, max_restarts, master_port, job_token, run_id, ps_addrs;
};

class RestartsTest : public ::testing::Test {
 protected:
  LaunchOptions options_for(const std::string& script, int max_restarts) {
    LaunchOptions options;
    options.nproc_per_node = 2;
    options.command = {"/bin/sh", "-c", script, "worker"};
    options.max_restarts = max_restarts;
    options.stdout_fd = out_.get();
    options.stderr_fd = err_.get();
    options.forward_signals = false;
    options.grace_period = 3000ms;
    options.extra_env["DIR"] = dir_.path();
    return options;
  }
  // The lines rank `rank` recorded, one per attempt it ran in.
  std::vector<EnvLine> env_lines(int rank) const {
    std::vector<EnvLine> lines;
    for (const std::string& text :
         split_lines(read_file(dir_.file("env" + std::to_string(rank))))) {
      std::istringstream in(text);
      EnvLine line;
      in >> line.restart_count >> line.max_restarts >> line.master_port >> line.job_token >>
          line.run_id >> line.ps_addrs;
      lines.push_back(line);
    }
    return lines;
  }
  // options_for(kKillServerOne) with two fake servers, one process each (whatever this host's
  // cores); server 1 is killed on attempts before `killed_attempts`.
  LaunchOptions killing_server_one(int max_restarts, int killed_attempts) {
    LaunchOptions options = options_for(kKillServerOne, max_restarts);
    options.servers = 2;
    options.server_processes = 2;
    options.server_command = {FAKE_PS_SERVER_PATH};
    options.extra_env["FAKE"] = FAKE_PS_SERVER_PATH;
    options.extra_env["ATTEMPTS"] = std::to_string(killed_attempts);
    return options;
  }
  // The pids server `index` printed ("[server I] pid=N"), one per start, oldest first.
  std::vector<pid_t> printed_server_pids(int index) const {
    std::vector<pid_t> pids;
    const std::string text = out();
    const std::regex pid_line("\\[server " + std::to_string(index) + "\\] pid=(\\d+)");
    for (std::sregex_iterator it(text.begin(), text.end(), pid_line), end; it != end; ++it) {
      pids.push_back(std::stoi((*it)[1]));
    }
    return pids;
  }
  // Every process the launch started, restarted attempts included, no longer exists.
  void expect_all_gone(const LaunchResult& result) {
    std::vector<pid_t> pids = printed_server_pids(0);
    for (pid_t pid : printed_server_pids(1)) pids.push_back(pid);
    for (const WorkerExit& worker : result.workers) pids.push_back(worker.pid);
    for (const RestartedAttempt& attempt : result.restarted_attempts) {
      for (const WorkerExit& worker : attempt.workers) pids.push_back(worker.pid);
    }
    for (pid_t pid : pids) EXPECT_TRUE(testing::process_gone(pid)) << "process " << pid;
    testing::kill_leftovers(pids);
  }
  std::string out() const { return read_file(dir_.file("stdout")); }
  std::string err() const { return read_file(dir_.file("stderr")); }

  TempDir dir_;
  UniqueFd out_{::open(dir_.file("stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644)};
  UniqueFd err_{::open(dir_.file("stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644)};
};

TEST_F(RestartsTest, FailedGroupIsRestartedWithTruthfulEnvironment) {
  const LaunchResult result = run_workers(options_for(kFailFirstAttempt, 2));
  ASSERT_EQ(result.exit_code(), 0) << result.summary() << err();

  ASSERT_EQ(result.restarted_attempts.size(), 1u);
  const RestartedAttempt& first = result.restarted_attempts[0];
  ASSERT_EQ(first.workers.size(), 2u);
  ASSERT_EQ(first.first_failed_local_rank, 1);
  EXPECT_EQ(first.workers[1].exit_code, 3);
  EXPECT_FALSE(first.workers[1].stopped_by_launcher);
  EXPECT_TRUE(first.workers[0].stopped_by_launcher);
  EXPECT_TRUE(first.workers[0].failed());  // SIGTERM ended its sleep
  for (const WorkerExit& worker : result.workers) EXPECT_FALSE(worker.failed());
  EXPECT_NE(first.workers[0].pid, result.workers[0].pid);

  for (int rank = 0; rank < 2; ++rank) {
    const std::vector<EnvLine> lines = env_lines(rank);
    ASSERT_EQ(lines.size(), 2u) << "rank " << rank;
    EXPECT_EQ(lines[0].restart_count, "0");
    EXPECT_EQ(lines[1].restart_count, "1");
    EXPECT_EQ(lines[0].max_restarts, "2");
    EXPECT_EQ(lines[1].max_restarts, "2");
    // A picked port is picked again for the new rendezvous; token and run id stay.
    EXPECT_EQ(lines[0].master_port, std::to_string(first.master_port));
    EXPECT_EQ(lines[1].master_port, std::to_string(result.master_port));
    EXPECT_EQ(lines[0].job_token, lines[1].job_token);
    EXPECT_EQ(lines[0].run_id, lines[1].run_id);
  }
  EXPECT_NE(first.master_port, result.master_port);
  EXPECT_TRUE(contains(err(), "gradwire-run: rank 1 (pid " + std::to_string(first.workers[1].pid) +
                                  ") exited with code 3; restarting the workers (restart 1 of 2)"))
      << err();

  const std::string summary = result.summary();
  EXPECT_TRUE(contains(summary, "attempt 1 (MASTER_PORT " + std::to_string(first.master_port) +
                                    ") failed: rank 1 (local 1, pid " +
                                    std::to_string(first.workers[1].pid) + ") exited with code 3"))
      << summary;
  EXPECT_TRUE(contains(summary, "attempt 2 (MASTER_PORT " + std::to_string(result.master_port) +
                                    ", the last) succeeded"))
      << summary;
}

TEST_F(RestartsTest, GivenPortIsKeptAcrossRestarts) {
  LaunchOptions options = options_for(kFailFirstAttempt, 1);
  options.master_port = pick_free_port();
  const LaunchResult result = run_workers(options);
  ASSERT_EQ(result.exit_code(), 0) << result.summary() << err();
  ASSERT_EQ(result.restarted_attempts.size(), 1u);
  EXPECT_EQ(result.restarted_attempts[0].master_port, options.master_port);
  EXPECT_EQ(result.master_port, options.master_port);
  for (const EnvLine& line : env_lines(0)) {
    EXPECT_EQ(line.master_port, std::to_string(options.master_port));
  }
}

TEST_F(RestartsTest, GivesUpAfterMaxRestarts) {
  // Rank 0 always fails (once it recorded its environment); rank 1 waits to be stopped.
  const std::string script = kRecordEnv +
                             "if [ \"$RANK\" = 0 ]; then exit 5; fi; "
                             "exec sleep 30";
  const LaunchResult result = run_workers(options_for(script, 2));
  EXPECT_EQ(result.exit_code(), 5);
  EXPECT_EQ(result.restarted_attempts.size(), 2u);
  EXPECT_EQ(result.first_failed_local_rank, 0);
  const std::vector<EnvLine> lines = env_lines(0);
  ASSERT_EQ(lines.size(), 3u);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i].restart_count, std::to_string(i));
  std::set<std::string> ports;
  for (const EnvLine& line : lines) ports.insert(line.master_port);
  EXPECT_EQ(ports.size(), 3u);  // a fresh rendezvous each time
  EXPECT_TRUE(contains(
      result.summary(),
      "attempt 3 (MASTER_PORT " + std::to_string(result.master_port) + ", the last) failed"))
      << result.summary();
  EXPECT_TRUE(contains(
      result.summary(),
      "rank 0 (local 0, pid " + std::to_string(result.workers[0].pid) + ") exited with code 5"))
      << result.summary();
}

TEST_F(RestartsTest, NoRestartsByDefault) {
  LaunchOptions options = options_for(kFailFirstAttempt, 0);
  const LaunchResult result = run_workers(options);
  EXPECT_EQ(result.exit_code(), 3);
  EXPECT_TRUE(result.restarted_attempts.empty());
  ASSERT_EQ(env_lines(0).size(), 1u);
  EXPECT_EQ(env_lines(0)[0].max_restarts, "0");
  EXPECT_FALSE(contains(result.summary(), "attempt")) << result.summary();
}

TEST_F(RestartsTest, ServersStayUpAcrossRestarts) {
  LaunchOptions options = options_for(kFailFirstAttempt, 1);
  options.servers = 1;
  options.server_command = {FAKE_PS_SERVER_PATH};
  const LaunchResult result = run_workers(options);
  ASSERT_EQ(result.exit_code(), 0) << result.summary() << out() << err();
  ASSERT_EQ(result.restarted_attempts.size(), 1u);
  // One server process for the whole launch, stopped at the normal end.
  ASSERT_EQ(result.servers.size(), 1u);
  EXPECT_TRUE(result.servers[0].stopped_by_launcher);
  std::smatch match;
  const std::string text = out();
  const std::regex pid_line("\\[server 0\\] pid=(\\d+)");
  int pid_lines = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), pid_line), end; it != end; ++it) {
    ++pid_lines;
    EXPECT_EQ(std::stoi((*it)[1]), result.servers[0].pid);
  }
  EXPECT_EQ(pid_lines, 1) << text;
  const std::vector<EnvLine> lines = env_lines(0);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].ps_addrs, "x" + result.servers[0].address);
  EXPECT_EQ(lines[1].ps_addrs, lines[0].ps_addrs);
}

TEST_F(RestartsTest, ServerKilledWhileWorkersRunIsRestartedOnItsPort) {
  LaunchOptions options = killing_server_one(1, 1);
  options.log_dir = dir_.file("logs");
  const LaunchResult result = run_workers(options);
  ASSERT_EQ(result.exit_code(), 0) << result.summary() << out() << err();

  ASSERT_EQ(result.restarted_attempts.size(), 1u);
  const RestartedAttempt& first = result.restarted_attempts[0];
  ASSERT_TRUE(first.failed_server.has_value());
  const ServerExit& killed = *first.failed_server;
  EXPECT_EQ(killed.index, 1);
  EXPECT_EQ(killed.signal, SIGKILL);
  EXPECT_FALSE(killed.stopped_by_launcher);
  EXPECT_EQ(first.first_failed_local_rank, -1);
  ASSERT_EQ(first.workers.size(), 2u);
  for (const WorkerExit& worker : first.workers) EXPECT_TRUE(worker.stopped_by_launcher);

  // Server 1 runs again on the same address as a new process; server 0 is the same process.
  ASSERT_EQ(result.servers.size(), 2u);
  EXPECT_EQ(result.servers[1].index, 1);
  EXPECT_EQ(result.servers[1].address, killed.address);
  EXPECT_NE(result.servers[1].pid, killed.pid);
  EXPECT_EQ(printed_server_pids(1), (std::vector<pid_t>{killed.pid, result.servers[1].pid}));
  EXPECT_EQ(printed_server_pids(0), (std::vector<pid_t>{result.servers[0].pid}));
  for (const ServerExit& server : result.servers) EXPECT_TRUE(server.stopped_by_launcher);
  const std::string text = out();
  const std::string args = "[server 1] args: --listen " + killed.address + "\n";
  EXPECT_NE(text.find(args), text.rfind(args)) << "server 1 started once only:\n" << text;
  // The restarted server appends to its predecessor's log.
  const std::string log = read_file(dir_.file("logs/server_1.log"));
  EXPECT_TRUE(contains(log, "pid=" + std::to_string(killed.pid) + "\n")) << log;
  EXPECT_TRUE(contains(log, "pid=" + std::to_string(result.servers[1].pid) + "\n")) << log;
  for (const std::string rank : {"0", "1"}) {
    EXPECT_TRUE(contains(text, "[server 0] received: again " + rank)) << text;
    EXPECT_TRUE(contains(text, "[server 1] received: again " + rank)) << text;
  }

  // The workers ran again, as after a worker failure, with the same servers' addresses.
  for (int rank = 0; rank < 2; ++rank) {
    const std::vector<EnvLine> lines = env_lines(rank);
    ASSERT_EQ(lines.size(), 2u) << "rank " << rank;
    EXPECT_EQ(lines[0].restart_count, "0");
    EXPECT_EQ(lines[1].restart_count, "1");
    EXPECT_EQ(lines[0].ps_addrs, "x" + result.servers[0].address + "," + result.servers[1].address);
    EXPECT_EQ(lines[1].ps_addrs, lines[0].ps_addrs);
  }
  const std::string server_one =
      "server 1 (" + killed.address + ", pid " + std::to_string(killed.pid) + ")";
  EXPECT_TRUE(contains(err(), "gradwire-run: " + server_one +
                                  " killed by signal 9 (SIGKILL) while the trainers ran; "
                                  "restarting it and the workers (restart 1 of 1)\n"))
      << err();
  const std::string summary = result.summary();
  EXPECT_TRUE(contains(summary, "gradwire-run: attempt 1 (MASTER_PORT " +
                                    std::to_string(first.master_port) + ") failed: " + server_one +
                                    " killed by signal 9 (SIGKILL) while the trainers ran; the "
                                    "server and the workers were restarted\n"))
      << summary;
  EXPECT_TRUE(contains(summary, "attempt 2 (MASTER_PORT " + std::to_string(result.master_port) +
                                    ", the last) succeeded"))
      << summary;
  expect_all_gone(result);
}

TEST_F(RestartsTest, ServerKilledWithoutMaxRestartsEndsTheLaunch) {
  const LaunchResult result = run_workers(killing_server_one(0, 1));
  EXPECT_EQ(result.exit_code(), 128 + SIGKILL) << result.summary() << err();
  EXPECT_TRUE(result.restarted_attempts.empty());
  EXPECT_EQ(result.first_failed_server, 1);
  EXPECT_EQ(result.first_failed_local_rank, -1);
  EXPECT_EQ(printed_server_pids(1).size(), 1u) << out();
  EXPECT_EQ(env_lines(0).size(), 1u);
  EXPECT_FALSE(contains(err(), "restarting")) << err();
  EXPECT_TRUE(
      contains(result.summary(), "server 1 (" + result.servers[1].address + ", pid " +
                                     std::to_string(result.servers[1].pid) +
                                     ") killed by signal 9 (SIGKILL) while the trainers ran"))
      << result.summary();
  expect_all_gone(result);
}

TEST_F(RestartsTest, ServerKilledAfterTheLastRestartFailsNamingIt) {
  // Killed on every attempt: one restart, then the launch fails.
  const LaunchResult result = run_workers(killing_server_one(1, 2));
  EXPECT_EQ(result.exit_code(), 128 + SIGKILL) << result.summary() << err();
  ASSERT_EQ(result.restarted_attempts.size(), 1u);
  EXPECT_TRUE(result.restarted_attempts[0].failed_server.has_value());
  EXPECT_EQ(result.first_failed_server, 1);
  ASSERT_EQ(result.servers.size(), 2u);
  const std::vector<pid_t> pids = printed_server_pids(1);
  ASSERT_EQ(pids.size(), 2u) << out();
  EXPECT_EQ(result.servers[1].pid, pids[1]);
  EXPECT_FALSE(result.servers[1].stopped_by_launcher);
  EXPECT_TRUE(result.servers[0].stopped_by_launcher);
  EXPECT_EQ(env_lines(0).size(), 2u);
  EXPECT_FALSE(contains(err(), "(restart 2 of 1)")) << err();
  const std::string summary = result.summary();
  EXPECT_TRUE(contains(summary, "attempt 2 (MASTER_PORT " + std::to_string(result.master_port) +
                                    ", the last) failed"))
      << summary;
  EXPECT_TRUE(contains(summary, "gradwire-run: server 1 (" + result.servers[1].address + ", pid " +
                                    std::to_string(pids[1]) +
                                    ") killed by signal 9 (SIGKILL) while the trainers ran"))
      << summary;
  expect_all_gone(result);
}

TEST_F(RestartsTest, ServerDyingWhileTheWorkersStopForARestartIsRestartedWithThem) {
  // Attempt 0: rank 1 fails once rank 0 is ready; rank 0, told to stop for the restart, makes the
  // server SIGKILL itself and waits until it no longer accepts connections (at most 10 s).
  // Attempt 1: both succeed, against the server started again.
  const std::string script =
      "if [ \"$TORCHELASTIC_RESTART_COUNT\" != 0 ]; then exit 0; fi; "
      "if [ \"$RANK\" = 1 ]; then "
      "i=0; while [ ! -s \"$DIR/ready\" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; "
      "exit 3; fi; "
      "trap '\"$FAKE\" --send \"$GRADWIRE_PS_ADDRS\" kill; i=0; "
      "while \"$FAKE\" --send \"$GRADWIRE_PS_ADDRS\" ping 2>/dev/null && [ $i -lt 200 ]; "
      "do sleep 0.05; i=$((i+1)); done; exit 0' TERM; "
      "echo ready > \"$DIR/ready\"; while true; do sleep 30 & wait $!; done";
  LaunchOptions options = options_for(script, 1);
  options.servers = 1;
  options.server_command = {FAKE_PS_SERVER_PATH};
  options.extra_env["FAKE"] = FAKE_PS_SERVER_PATH;
  const LaunchResult result = run_workers(options);
  EXPECT_EQ(result.exit_code(), 0) << result.summary() << err();
  ASSERT_EQ(result.restarted_attempts.size(), 1u) << result.summary();
  const RestartedAttempt& first = result.restarted_attempts[0];
  EXPECT_FALSE(first.failed_server.has_value());  // rank 1 failed first
  ASSERT_GE(first.first_failed_local_rank, 0);
  EXPECT_EQ(first.workers[first.first_failed_local_rank].rank, 1);
  ASSERT_EQ(first.also_failed_servers.size(), 1u);
  EXPECT_EQ(first.also_failed_servers[0].index, 0);
  EXPECT_EQ(first.also_failed_servers[0].signal, SIGKILL);
  EXPECT_EQ(printed_server_pids(0).size(), 2u) << out();  // started again
  EXPECT_TRUE(contains(err(), "(SIGKILL) too; restarting it with the workers")) << err();
  EXPECT_TRUE(contains(result.summary(),
                       "killed by signal 9 (SIGKILL) too; the server and the "
                       "workers were restarted"))
      << result.summary();
  expect_all_gone(result);
}

TEST_F(RestartsTest, RestartedWorkerAppendsToItsLog) {
  LaunchOptions options =
      options_for("echo \"attempt $TORCHELASTIC_RESTART_COUNT\"; " + kFailFirstAttempt, 1);
  options.log_dir = dir_.file("logs");
  const LaunchResult result = run_workers(options);
  ASSERT_EQ(result.exit_code(), 0) << result.summary() << err();
  const std::string log = read_file(dir_.file("logs/rank_1.log"));
  EXPECT_EQ(log, "attempt 0\nattempt 1\n");
}

TEST(RestartsValidationTest, NegativeMaxRestartsIsRejected) {
  LaunchOptions options;
  options.command = {"/bin/true"};
  options.max_restarts = -1;
  EXPECT_THROW(run_workers(options), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::launch
