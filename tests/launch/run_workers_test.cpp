// run_workers with real worker processes (/bin/sh scripts): environment, output, failures,
// signals and cleanup. Every worker that could hang sleeps at most 30 s, well below the test
// timeout, and the tests assert it was stopped long before that.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <regex>
#include <thread>

#include "gradwire/common/error.h"
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

// Shell function for worker scripts: `wait_for FILE` waits (at most 20 s) until FILE exists, so
// a worker can fail only once the others are ready, however loaded the machine is.
const std::string kWaitFor =
    "wait_for() { i=0; while [ ! -s \"$1\" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); "
    "done; }; ";

// Options running `script` under /bin/sh in every worker, output captured in files of `dir`.
class RunWorkersTest : public ::testing::Test {
 protected:
  LaunchOptions options_for(const std::string& script, int nproc) {
    LaunchOptions options;
    options.nproc_per_node = nproc;
    options.command = {"/bin/sh", "-c", script, "worker"};
    options.stdout_fd = out_.get();
    options.stderr_fd = err_.get();
    options.grace_period = 2000ms;
    options.extra_env["DIR"] = dir_.path();
    return options;
  }
  std::string out() const { return read_file(dir_.file("stdout")); }
  std::string err() const { return read_file(dir_.file("stderr")); }

  // The pids the workers wrote to DIR/<prefix><rank>.
  std::vector<pid_t> pids(const std::string& prefix, int count) const {
    std::vector<pid_t> result;
    for (int rank = 0; rank < count; ++rank) {
      result.push_back(testing::wait_for_pid_file(dir_.file(prefix + std::to_string(rank))));
    }
    return result;
  }

  void TearDown() override { testing::kill_leftovers(spawned_); }

  TempDir dir_;
  UniqueFd out_{::open(dir_.file("stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644)};
  UniqueFd err_{::open(dir_.file("stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644)};
  std::vector<pid_t> spawned_;  // killed in TearDown should a test fail half-way
};

TEST_F(RunWorkersTest, EachWorkerSeesItsEnvironment) {
  LaunchOptions options = options_for(
      "echo \"env RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE "
      "LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE GROUP_RANK=$GROUP_RANK ROLE_RANK=$ROLE_RANK "
      "MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT TOKEN=$GRADWIRE_JOB_TOKEN "
      "RUN=$TORCHELASTIC_RUN_ID EXTRA=$EXTRA\"",
      2);
  options.nnodes = 2;
  options.node_rank = 1;
  options.master_port = pick_free_port();
  options.extra_env["EXTRA"] = "yes";

  const LaunchResult result = run_workers(options);
  ASSERT_EQ(result.exit_code(), 0) << result.summary() << err();
  EXPECT_EQ(result.master_port, options.master_port);
  ASSERT_EQ(result.workers.size(), 2u);

  const std::regex line_format(
      R"(\[rank (\d)\] env RANK=(\d) LOCAL_RANK=(\d) WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 )"
      R"(GROUP_RANK=1 ROLE_RANK=(\d) MASTER_ADDR=127\.0\.0\.1 MASTER_PORT=(\d+) )"
      R"(TOKEN=([0-9a-f]+) RUN=(\S+) EXTRA=yes)");
  std::map<int, std::smatch> by_rank;
  const std::string text = out();
  const std::vector<std::string> lines = split_lines(text);
  ASSERT_EQ(lines.size(), 2u) << text;
  std::vector<std::string> tokens, run_ids;
  for (const std::string& line : lines) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, line_format)) << line;
    const int prefix_rank = std::stoi(match[1]);
    EXPECT_EQ(std::stoi(match[2]), prefix_rank);
    EXPECT_EQ(std::stoi(match[3]), prefix_rank - 2);
    EXPECT_EQ(std::stoi(match[4]), prefix_rank);
    EXPECT_EQ(std::stoi(match[5]), options.master_port);
    tokens.push_back(match[6]);
    run_ids.push_back(match[7]);
  }
  EXPECT_EQ(tokens[0], tokens[1]);
  EXPECT_EQ(run_ids[0], run_ids[1]);
  if (std::getenv("GRADWIRE_JOB_TOKEN") == nullptr) {
    EXPECT_EQ(tokens[0].size(), 32u);
  }
}

TEST_F(RunWorkersTest, PicksAFreePortOnOneNode) {
  const LaunchResult result = run_workers(options_for("echo port=$MASTER_PORT", 1));
  ASSERT_EQ(result.exit_code(), 0) << result.summary();
  EXPECT_GT(result.master_port, 0);
  EXPECT_EQ(out(), "[rank 0] port=" + std::to_string(result.master_port) + "\n");
}

TEST_F(RunWorkersTest, OutputIsPrefixedAndLogged) {
  LaunchOptions options = options_for("echo out$RANK; echo err$RANK >&2; printf 'tail%s' $RANK", 2);
  options.log_dir = dir_.file("logs/nested");
  const LaunchResult result = run_workers(options);
  ASSERT_EQ(result.exit_code(), 0) << result.summary();

  const std::string out_text = out();
  const std::string err_text = err();
  for (int rank = 0; rank < 2; ++rank) {
    const std::string prefix = "[rank " + std::to_string(rank) + "] ";
    const std::string r = std::to_string(rank);
    EXPECT_TRUE(contains(out_text, prefix + "out" + r + "\n")) << out_text;
    EXPECT_TRUE(contains(out_text, prefix + "tail" + r + "\n")) << out_text;
    EXPECT_TRUE(contains(err_text, prefix + "err" + r + "\n")) << err_text;
    EXPECT_FALSE(contains(out_text, "err" + r)) << out_text;

    const std::string log = read_file(options.log_dir + "/rank_" + r + ".log");
    EXPECT_TRUE(contains(log, "out" + r + "\n")) << log;
    EXPECT_TRUE(contains(log, "err" + r + "\n")) << log;
    EXPECT_TRUE(contains(log, "tail" + r)) << log;
    EXPECT_FALSE(contains(log, "[rank")) << log;
  }
}

TEST_F(RunWorkersTest, NoPrefixWritesPlainLines) {
  LaunchOptions options = options_for("echo plain$RANK", 2);
  options.prefix_output = false;
  ASSERT_EQ(run_workers(options).exit_code(), 0);
  std::vector<std::string> lines = split_lines(out());
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"plain0", "plain1"}));
}

TEST_F(RunWorkersTest, ManyLinesFromManyRanksStayWhole) {
  constexpr int kLines = 2000;
  const LaunchOptions options =
      options_for("i=0; while [ $i -lt " + std::to_string(kLines) +
                      " ]; do echo \"r$RANK-line$i-abcdefghijklmnopqrstuvwxyz\"; i=$((i+1)); done",
                  3);
  ASSERT_EQ(run_workers(options).exit_code(), 0);
  const std::regex line_format(R"(\[rank (\d)\] r(\d)-line(\d+)-abcdefghijklmnopqrstuvwxyz)");
  std::map<int, int> next_line;
  for (const std::string& line : split_lines(out())) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, line_format)) << line;
    const int rank = std::stoi(match[1]);
    EXPECT_EQ(std::stoi(match[2]), rank);
    EXPECT_EQ(std::stoi(match[3]), next_line[rank]++);  // in order, none lost
  }
  EXPECT_EQ(next_line, (std::map<int, int>{{0, kLines}, {1, kLines}, {2, kLines}}));
}

TEST_F(RunWorkersTest, FailingRankStopsTheOthers) {
  // Rank 1 fails and leaves a background child behind; the others would sleep 30 s, each with a
  // background child of its own. Nothing may survive the call.
  const LaunchOptions options =
      options_for(kWaitFor +
                      "sleep 30 & echo $! > \"$DIR/child$RANK\"; echo $$ > \"$DIR/pid$RANK\"; "
                      "if [ \"$RANK\" = 1 ]; then wait_for \"$DIR/pid0\"; wait_for \"$DIR/pid2\"; "
                      "sleep 0.1; exit 3; fi; wait",
                  3);
  const auto start = std::chrono::steady_clock::now();
  const LaunchResult result = run_workers(options);
  const auto elapsed = std::chrono::steady_clock::now() - start;

  EXPECT_LT(elapsed, 10s);
  EXPECT_EQ(result.exit_code(), 3);
  EXPECT_EQ(result.first_failed_local_rank, 1);
  ASSERT_EQ(result.workers.size(), 3u);
  EXPECT_FALSE(result.workers[1].stopped_by_launcher);
  EXPECT_EQ(result.workers[1].exit_code, 3);
  for (int local : {0, 2}) {
    EXPECT_TRUE(result.workers[local].stopped_by_launcher);
    EXPECT_TRUE(result.workers[local].failed());
  }
  const std::string summary = result.summary();
  EXPECT_TRUE(contains(summary, "rank 1 (local 1, pid " + std::to_string(result.workers[1].pid) +
                                    ") exited with code 3"))
      << summary;
  EXPECT_TRUE(contains(summary, "rank 0 (local 0, pid " + std::to_string(result.workers[0].pid) +
                                    ") was stopped by gradwire-run after rank 1 failed"))
      << summary;

  const std::vector<pid_t> workers = pids("pid", 3);
  const std::vector<pid_t> children = pids("child", 3);
  spawned_ = workers;
  spawned_.insert(spawned_.end(), children.begin(), children.end());
  for (int local = 0; local < 3; ++local) {
    EXPECT_EQ(workers[local], result.workers[local].pid);
    // The workers were reaped by run_workers: they no longer exist at all.
    errno = 0;
    EXPECT_EQ(::kill(workers[local], 0), -1);
    EXPECT_EQ(errno, ESRCH) << "worker " << workers[local];
  }
  // Their background children got SIGKILL when their worker ended; the kernel finishes them
  // asynchronously, so allow it a moment (they would sleep for 30 s otherwise).
  for (pid_t child : children) {
    ASSERT_GT(child, 0);
    EXPECT_TRUE(testing::wait_until([&] { return testing::process_gone(child); }, 5000ms))
        << "background child " << child << " still runs";
  }
}

TEST_F(RunWorkersTest, WorkerKilledBySignalIsReported) {
  const LaunchOptions options =
      options_for(kWaitFor +
                      "if [ \"$RANK\" = 0 ]; then wait_for \"$DIR/ready1\"; kill -KILL $$; fi; "
                      "echo yes > \"$DIR/ready1\"; exec sleep 30",
                  2);
  const LaunchResult result = run_workers(options);
  EXPECT_EQ(result.exit_code(), 128 + SIGKILL);
  EXPECT_EQ(result.workers[0].signal, SIGKILL);
  EXPECT_FALSE(result.workers[0].stopped_by_launcher);
  EXPECT_TRUE(result.workers[1].stopped_by_launcher);
  EXPECT_EQ(result.workers[1].signal, SIGTERM);
  EXPECT_TRUE(contains(result.summary(), "rank 0 (local 0, pid " +
                                             std::to_string(result.workers[0].pid) +
                                             ") killed by signal 9 (SIGKILL)"))
      << result.summary();
}

TEST_F(RunWorkersTest, WorkerIgnoringSigtermIsKilledAfterGracePeriod) {
  LaunchOptions options = options_for(
      kWaitFor +
          "trap '' TERM; if [ \"$RANK\" = 1 ]; then wait_for \"$DIR/ready0\"; exit 5; fi; "
          "echo yes > \"$DIR/ready0\"; sleep 30",
      2);
  options.grace_period = 300ms;
  const auto start = std::chrono::steady_clock::now();
  const LaunchResult result = run_workers(options);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_EQ(result.exit_code(), 5);
  EXPECT_TRUE(result.workers[0].stopped_by_launcher);
  EXPECT_EQ(result.workers[0].signal, SIGKILL);
}

TEST_F(RunWorkersTest, ForwardsSignalsAndRestoresHandlers) {
  struct sigaction before {};
  ASSERT_EQ(::sigaction(SIGTERM, nullptr, &before), 0);
  const LaunchOptions options = options_for("echo $$ > \"$DIR/pid$RANK\"; exec sleep 30", 2);

  // Sends SIGTERM to this process once both workers run (so forwarding is installed).
  std::thread signaller([&] {
    bool started = true;
    for (int rank = 0; rank < 2; ++rank) {
      started = started && testing::wait_for_pid_file(dir_.file("pid" + std::to_string(rank))) > 0;
    }
    if (started) ::kill(::getpid(), SIGTERM);
  });
  const auto start = std::chrono::steady_clock::now();
  const LaunchResult result = run_workers(options);
  signaller.join();

  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_EQ(result.received_signal, SIGTERM);
  EXPECT_EQ(result.exit_code(), 128 + SIGTERM);
  for (const WorkerExit& worker : result.workers) {
    EXPECT_TRUE(worker.stopped_by_launcher);
    EXPECT_EQ(worker.signal, SIGTERM);
  }
  EXPECT_TRUE(contains(result.summary(), "received SIGTERM")) << result.summary();

  struct sigaction after {};
  ASSERT_EQ(::sigaction(SIGTERM, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

TEST_F(RunWorkersTest, UnexecutableProgramIsReportedByName) {
  LaunchOptions options = options_for("", 2);
  options.command = {dir_.file("no-such-program"), "--flag"};
  try {
    run_workers(options);
    FAIL() << "expected ProgramNotExecutable";
  } catch (const ProgramNotExecutable& error) {
    EXPECT_TRUE(contains(error.what(), "could not execute " + dir_.file("no-such-program") +
                                           ": No such file or directory"))
        << error.what();
    EXPECT_EQ(error.error_number(), ENOENT);
  }

  // A file without execute permission.
  const std::string not_executable = dir_.file("data.txt");
  UniqueFd file(::open(not_executable.c_str(), O_WRONLY | O_CREAT, 0644));
  options.command = {not_executable};
  try {
    run_workers(options);
    FAIL() << "expected ProgramNotExecutable";
  } catch (const ProgramNotExecutable& error) {
    EXPECT_TRUE(contains(error.what(), "could not execute " + not_executable + ": "))
        << error.what();
    EXPECT_EQ(error.error_number(), EACCES);
  }
}

TEST_F(RunWorkersTest, LogDirThatCannotBeCreatedIsAnError) {
  LaunchOptions options = options_for("true", 1);
  UniqueFd file(::open(dir_.file("plainfile").c_str(), O_WRONLY | O_CREAT, 0644));
  options.log_dir = dir_.file("plainfile/logs");
  EXPECT_THROW(run_workers(options), Error);
}

TEST_F(RunWorkersTest, IgnoredSigchldIsAnError) {
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGCHLD, &ignore, &previous), 0);
  EXPECT_THROW(run_workers(options_for("true", 1)), Error);
  ::sigaction(SIGCHLD, &previous, nullptr);
}

TEST_F(RunWorkersTest, WorkersDoNotInheritLauncherDescriptors) {
  // out_ and err_ are open in this process without close-on-exec; the worker must not see them.
  const LaunchOptions options = options_for(
      "for fd in $(ls /proc/self/fd); do [ \"$fd\" -gt 2 ] && echo leaked$fd; done; exit 0", 1);
  ASSERT_EQ(run_workers(options).exit_code(), 0);
  // ls itself opens a directory fd (>2); anything else would be a leak of ours.
  EXPECT_LE(split_lines(out()).size(), 1u) << out();
}

}  // namespace
}  // namespace gradwire::launch
