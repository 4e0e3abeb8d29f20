// run_workers with parameter servers (LaunchOptions::servers), using the fake server of
// fake_ps_server.cpp and /bin/sh trainers: start order, GRADWIRE_PS_ADDRS and tokens, prefixes,
// shutdown at the end, failures on either side, and no process left behind.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <set>

#include "gradwire/common/error.h"
#include "gradwire/common/files.h"
#include "gradwire/launch/launcher.h"
#include "servers_fixture.h"
#include "test_support.h"

namespace gradwire::launch {
namespace {

using namespace std::chrono_literals;
using gradwire::UniqueFd;
using testing::contains;
using testing::read_file;
using testing::split_lines;
using testing::TempDir;

// Sends "hello from rank R" to every server (one attempt each: fails unless all listen already).
const std::string kGreetServers =
    "\"$FAKE\" --send \"$GRADWIRE_PS_ADDRS\" \"hello from rank $RANK\"";

class ServersTest : public testing::ServersFixture {
 protected:
  // `servers` fake servers, one process each whatever this host's cores
  // (grouped_servers_test.cpp tests several per process); see server_options.
  LaunchOptions options_for(const std::string& script, int nproc, int servers,
                            const std::vector<std::string>& server_args = {}) {
    return server_options(script, nproc, servers, servers, server_args);
  }

  // The pid server `index` printed ("[server I] pid=N"), remembered for cleanup; -1 if none.
  pid_t printed_server_pid(int index) {
    std::smatch match;
    const std::string text = out();
    const std::regex pid_line("\\[server " + std::to_string(index) + "\\] pid=(\\d+)");
    if (!std::regex_search(text, match, pid_line)) return -1;
    const pid_t pid = std::stoi(match[1]);
    spawned_.push_back(pid);
    return pid;
  }

  // Every process of `result` was reaped: it no longer exists at all.
  void expect_all_gone(const LaunchResult& result) {
    std::vector<pid_t> pids;
    for (const WorkerExit& worker : result.workers) pids.push_back(worker.pid);
    for (const ServerExit& server : result.servers) pids.push_back(server.pid);
    spawned_.insert(spawned_.end(), pids.begin(), pids.end());
    for (pid_t pid : pids) {
      errno = 0;
      EXPECT_EQ(::kill(pid, 0), -1) << "process " << pid << " still exists";
      EXPECT_EQ(errno, ESRCH) << "process " << pid;
    }
  }

};

TEST_F(ServersTest, ServersStartFirstAndTrainersReachThem) {
  // The servers listen only after 300 ms; the trainers try to connect once, at once.
  LaunchOptions options = options_for(
      kGreetServers +
          " && echo \"env addrs=$GRADWIRE_PS_ADDRS token=$GRADWIRE_TOKEN job=$GRADWIRE_JOB_TOKEN\"",
      2, 2, {"--tag", "extra", "--listen-after-ms", "300"});
  options.log_dir = dir_.file("logs");
  const LaunchResult result = run_workers(options);
  ASSERT_EQ(result.exit_code(), 0) << result.summary() << out() << err();
  EXPECT_EQ(result.summary(), "");
  ASSERT_EQ(result.servers.size(), 2u);
  ASSERT_EQ(result.workers.size(), 2u);

  const std::string text = out();
  std::set<std::string> addresses;
  for (int index = 0; index < 2; ++index) {
    const ServerExit& server = result.servers[index];
    const std::string prefix = "[server " + std::to_string(index) + "] ";
    EXPECT_EQ(server.index, index);
    EXPECT_TRUE(server.stopped_by_launcher);
    EXPECT_FALSE(server.failed());
    EXPECT_EQ(server.exit_code, 0);  // the fake exits 0 on SIGTERM
    EXPECT_TRUE(std::regex_match(server.address, std::regex(R"(127\.0\.0\.1:\d+)")))
        << server.address;
    addresses.insert(server.address);
    EXPECT_TRUE(contains(
        text, prefix + "args: --tag extra --listen-after-ms 300 --listen " + server.address + "\n"))
        << text;
    EXPECT_TRUE(contains(text, prefix + "gradwire-ps-server listening on " + server.address))
        << text;
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_TRUE(contains(text, prefix + "received: hello from rank " + std::to_string(rank)))
          << text;
    }
    EXPECT_TRUE(contains(text, prefix + "stopping on SIGTERM")) << text;
    EXPECT_TRUE(contains(read_file(dir_.file("logs/server_" + std::to_string(index) + ".log")),
                         "gradwire-ps-server listening on " + server.address));
  }
  EXPECT_EQ(addresses.size(), 2u);
  const std::string ps_addrs = result.servers[0].address + "," + result.servers[1].address;

  // One token for the whole launch, in the trainers' and the servers' environment alike.
  const std::regex trainer_line(R"(\[rank (\d)\] env addrs=(\S*) token=(\S*) job=(\S*))");
  const std::regex server_line(R"(\[server (\d)\] token=(\S*) job_token=(\S*) ps_addrs=(\S*))");
  std::set<std::string> tokens;
  int trainer_lines = 0, server_lines = 0;
  for (const std::string& line : split_lines(text)) {
    std::smatch match;
    if (std::regex_match(line, match, trainer_line)) {
      ++trainer_lines;
      EXPECT_EQ(match[2], ps_addrs);
      tokens.insert(match[3]);
      tokens.insert(match[4]);
    } else if (std::regex_match(line, match, server_line)) {
      ++server_lines;
      EXPECT_EQ(match[4], ps_addrs);
      tokens.insert(match[2]);
      tokens.insert(match[3]);
    }
  }
  EXPECT_EQ(trainer_lines, 2) << text;
  EXPECT_EQ(server_lines, 2) << text;
  ASSERT_EQ(tokens.size(), 1u) << text;
  const std::string token = *tokens.begin();
  EXPECT_FALSE(token.empty());
  if (std::getenv("GRADWIRE_JOB_TOKEN") == nullptr) EXPECT_EQ(token.size(), 32u);
  for (const std::string& line : split_lines(text)) {  // never on a command line
    if (contains(line, "] args: ")) EXPECT_FALSE(contains(line, token)) << line;
  }
  expect_all_gone(result);
}

TEST_F(ServersTest, FailingTrainerStopsTheServers) {
  const LaunchOptions options = options_for(
      kGreetServers + " || exit 9; if [ \"$RANK\" = 1 ]; then exit 4; fi; exec sleep 30", 2, 2);
  const auto start = std::chrono::steady_clock::now();
  const LaunchResult result = run_workers(options);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);

  EXPECT_EQ(result.exit_code(), 4) << result.summary() << err();
  EXPECT_EQ(result.first_failed_local_rank, 1);
  EXPECT_EQ(result.first_failed_server, -1);
  EXPECT_TRUE(result.workers[0].stopped_by_launcher);
  for (const ServerExit& server : result.servers) EXPECT_TRUE(server.stopped_by_launcher);
  const std::string summary = result.summary();
  EXPECT_TRUE(contains(summary, "rank 1 (local 1, pid " + std::to_string(result.workers[1].pid) +
                                    ") exited with code 4"))
      << summary;
  EXPECT_TRUE(contains(summary, "server 0 (" + result.servers[0].address + ", pid " +
                                    std::to_string(result.servers[0].pid) +
                                    ") was stopped by gradwire-run after rank 1 failed"))
      << summary;
  expect_all_gone(result);
}

TEST_F(ServersTest, ServerExitingBeforeReadyFailsWithoutStartingTrainers) {
  const LaunchOptions options =
      options_for("echo ran > \"$DIR/trainer_ran\"", 2, 1, {"--mode", "exit-at-once"});
  try {
    run_workers(options);
    FAIL() << "expected PeerLostError";
  } catch (const PeerLostError& error) {
    const std::string message = error.what();
    EXPECT_TRUE(std::regex_search(
        message, std::regex(R"(server 0 \(127\.0\.0\.1:(\d+), pid \d+, command: \S+ --mode )"
                            R"(exit-at-once --listen 127\.0\.0\.1:\1\))")))
        << message;
    EXPECT_TRUE(contains(message, "exited with code 1 before accepting connections")) << message;
    EXPECT_TRUE(contains(message, "the trainers were not started")) << message;
  }
  EXPECT_TRUE(contains(err(), "[server 0] fake server: failing at once")) << err();
  EXPECT_EQ(read_file(dir_.file("trainer_ran")), "");
  EXPECT_FALSE(contains(out(), "[rank")) << out();
}

TEST_F(ServersTest, ServerThatNeverListensTimesOut) {
  LaunchOptions options =
      options_for("echo ran > \"$DIR/trainer_ran\"", 1, 2, {"--mode", "never-listen"});
  options.server_ready_timeout = 500ms;
  try {
    run_workers(options);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& error) {
    const std::string message = error.what();
    EXPECT_TRUE(contains(message, "server 0 (127.0.0.1:")) << message;
    EXPECT_TRUE(contains(message, "did not accept connections within 500 ms")) << message;
    EXPECT_TRUE(contains(message, "--listen 127.0.0.1:")) << message;
  }
  EXPECT_EQ(read_file(dir_.file("trainer_ran")), "");
  for (int index = 0; index < 2; ++index) {
    const pid_t pid = printed_server_pid(index);
    ASSERT_GT(pid, 0) << out();
    EXPECT_TRUE(testing::process_gone(pid)) << "server " << index << " still runs";
  }
}

TEST_F(ServersTest, ServerDyingWhileTrainersRunStopsThem) {
  // Rank 0 asks server 1 to exit (with code 3) once rank 1 greeted the servers too (else rank 1
  // could find server 1 gone and fail first); both trainers would sleep 30 s.
  const LaunchOptions options =
      options_for(kGreetServers +
                      " || exit 9; touch \"$DIR/greeted.$RANK\"; if [ \"$RANK\" = 0 ]; then "
                      "for i in $(seq 100); do [ -e \"$DIR/greeted.1\" ] && break; sleep 0.1; "
                      "done; \"$FAKE\" --send \"$(echo $GRADWIRE_PS_ADDRS | cut -d, -f2)\" die; "
                      "fi; exec sleep 30",
                  2, 2);
  const auto start = std::chrono::steady_clock::now();
  const LaunchResult result = run_workers(options);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);

  EXPECT_EQ(result.exit_code(), 3) << result.summary() << err();
  EXPECT_EQ(result.first_failed_server, 1);
  EXPECT_EQ(result.first_failed_local_rank, -1);
  ASSERT_EQ(result.servers.size(), 2u);
  EXPECT_TRUE(result.servers[1].failed());
  EXPECT_EQ(result.servers[1].exit_code, 3);
  EXPECT_TRUE(result.servers[0].stopped_by_launcher);
  for (const WorkerExit& worker : result.workers) EXPECT_TRUE(worker.stopped_by_launcher);
  const std::string summary = result.summary();
  EXPECT_TRUE(contains(summary, "server 1 (" + result.servers[1].address + ", pid " +
                                    std::to_string(result.servers[1].pid) +
                                    ") exited with code 3 while the trainers ran"))
      << summary;
  EXPECT_TRUE(contains(summary, "rank 0 (local 0, pid " + std::to_string(result.workers[0].pid) +
                                    ") was stopped by gradwire-run after server 1 failed"))
      << summary;
  expect_all_gone(result);
}

TEST_F(ServersTest, ServerExitingZeroWhileTrainersRunIsAFailureToo) {
  const LaunchOptions options = options_for(
      kGreetServers + " || exit 9; \"$FAKE\" --send \"$GRADWIRE_PS_ADDRS\" quit; exec sleep 30", 1,
      1);
  const LaunchResult result = run_workers(options);
  EXPECT_EQ(result.first_failed_server, 0);
  EXPECT_EQ(result.servers[0].exit_code, 0);
  EXPECT_EQ(result.exit_code(), 1) << result.summary();
  EXPECT_TRUE(result.workers[0].stopped_by_launcher);
  EXPECT_TRUE(contains(result.summary(), "exited with code 0 while the trainers ran"))
      << result.summary();
  expect_all_gone(result);
}

TEST_F(ServersTest, ServersIgnoringSigtermAreKilledAfterTheGracePeriod) {
  LaunchOptions options = options_for(kGreetServers, 1, 1, {"--ignore-term"});
  options.grace_period = 300ms;
  const LaunchResult result = run_workers(options);
  EXPECT_EQ(result.exit_code(), 0) << result.summary() << err();
  ASSERT_EQ(result.servers.size(), 1u);
  EXPECT_TRUE(result.servers[0].stopped_by_launcher);
  EXPECT_EQ(result.servers[0].signal, SIGKILL);
  expect_all_gone(result);
}

TEST_F(ServersTest, ServersNeedASingleNode) {
  LaunchOptions options = options_for("true", 1, 1);
  options.nnodes = 2;
  options.master_port = 29500;
  try {
    run_workers(options);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_TRUE(contains(error.what(), "GRADWIRE_PS_ADDRS")) << error.what();
  }
}

}  // namespace
}  // namespace gradwire::launch
