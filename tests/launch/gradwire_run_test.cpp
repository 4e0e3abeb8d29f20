// The gradwire-run executable: command-line parsing, exit codes, signal forwarding, restarts,
// and workers dying with a launcher that is SIGKILLed (the server flags:
// gradwire_run_servers_test.cpp). gradwire-run runs as a child of the test; every wait is bounded
// and the Child handle kills it if a test fails half-way.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "gradwire_run_fixture.h"
#include "launch/core_binding.h"
#include "test_support.h"

namespace gradwire::launch {
namespace {

using namespace std::chrono_literals;
using testing::Child;
using testing::contains;
using testing::GradwireRunTest;
using testing::read_file;
using testing::split_lines;
using testing::TempDir;

TEST_F(GradwireRunTest, ProgramFlagsArePassedThroughUntouched) {
  ASSERT_EQ(run({"-n", "2", "/bin/sh", "-c", "echo \"args:$*\"", "sh", "--foo", "-n", "7",
                 "--nproc-per-node", "3", "--", "x"}),
            0)
      << err();
  std::vector<std::string> lines = split_lines(out());
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"[rank 0] args:--foo -n 7 --nproc-per-node 3 -- x",
                                             "[rank 1] args:--foo -n 7 --nproc-per-node 3 -- x"}));
}

TEST_F(GradwireRunTest, BindCoresGivesEachWorkerItsBlock) {
  const std::vector<int> allowed = detail::allowed_cpus_of_this_process();
  const detail::CoreBindingPlan plan = detail::plan_core_binding(allowed, 2);
  ASSERT_EQ(run({"--bind-cores", "-n", "2", "/bin/sh", "-c", testing::kPrintCpusScript}), 0)
      << err();
  const std::map<int, testing::WorkerCpus> workers = testing::worker_cpus_by_rank(out());
  ASSERT_EQ(workers.size(), 2u) << out();
  for (const auto& [rank, cpus] : workers) {
    EXPECT_EQ(cpus.allowed, plan.worker_cpus[rank]) << "rank " << rank;
    EXPECT_EQ(cpus.bound, detail::cpu_list_text(plan.worker_cpus[rank])) << "rank " << rank;
  }
}

TEST_F(GradwireRunTest, WithoutBindCoresWorkersKeepTheLaunchersMask) {
  const std::vector<int> allowed = detail::allowed_cpus_of_this_process();
  ASSERT_EQ(run({"-n", "2", "/bin/sh", "-c", testing::kPrintCpusScript}), 0) << err();
  const std::map<int, testing::WorkerCpus> workers = testing::worker_cpus_by_rank(out());
  ASSERT_EQ(workers.size(), 2u) << out();
  for (const auto& [rank, cpus] : workers) {
    EXPECT_EQ(cpus.allowed, allowed) << "rank " << rank;
    EXPECT_EQ(cpus.bound, "") << "rank " << rank;
  }
}

TEST_F(GradwireRunTest, AcceptsTorchrunSpellingsAndDoubleDash) {
  ASSERT_EQ(run({"--nproc_per_node=2", "--no-prefix", "--master_port", "29999", "--", "/bin/sh",
                 "-c", "echo $RANK/$WORLD_SIZE:$MASTER_PORT"}),
            0)
      << err();
  std::vector<std::string> lines = split_lines(out());
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"0/2:29999", "1/2:29999"}));
}

TEST_F(GradwireRunTest, LogDirAndThreadsPerWorker) {
  const std::string logs = dir_.file("logs");
  ASSERT_EQ(run({"--nproc-per-node", "2", "--log-dir", logs, "--threads-per-worker", "3",
                 "/usr/bin/env"}),
            0)
      << err();
  for (const std::string rank : {"0", "1"}) {
    const std::string log = read_file(logs + "/rank_" + rank + ".log");
    EXPECT_TRUE(contains(log, "RANK=" + rank + "\n")) << log;
    if (std::getenv("OMP_NUM_THREADS") == nullptr) {
      EXPECT_TRUE(contains(log, "OMP_NUM_THREADS=3\n")) << log;
    }
  }
}

TEST_F(GradwireRunTest, ExitsWithFailedRankCodeAndPrintsSummary) {
  EXPECT_EQ(run({"-n", "2", "--grace-period", "500ms", "/bin/sh", "-c",
                 "if [ $RANK = 1 ]; then exit 7; fi; exec sleep 30"}),
            7);
  EXPECT_TRUE(contains(err(), "gradwire-run: rank 1 (local 1, pid ")) << err();
  EXPECT_TRUE(contains(err(), ") exited with code 7")) << err();
  EXPECT_TRUE(contains(err(), "was stopped by gradwire-run after rank 1 failed")) << err();
}

TEST_F(GradwireRunTest, UnexecutableProgramExits127NamingIt) {
  EXPECT_EQ(run({"-n", "2", "gradwire-no-such-program", "--x"}), 127);
  EXPECT_TRUE(contains(err(), "could not execute gradwire-no-such-program: No such file")) << err();
}

TEST_F(GradwireRunTest, UsageErrorsExit2) {
  EXPECT_EQ(run({"-n", "2"}), 2);  // no program
  EXPECT_TRUE(contains(err(), "PROGRAM")) << err();
  EXPECT_EQ(run({"--no-such-option", "/bin/true"}), 2);
  EXPECT_EQ(run({"-n", "0", "/bin/true"}), 2);
  EXPECT_TRUE(contains(err(), "nproc_per_node")) << err();
  EXPECT_EQ(run({"--nnodes", "2", "--node-rank", "1", "/bin/true"}), 2);  // port 0, two nodes
  EXPECT_EQ(run({"--grace-period", "soon", "/bin/true"}), 2);
}

TEST_F(GradwireRunTest, SigtermIsForwardedAndWorkersAreGone) {
  auto launcher = start_two_workers("exec sleep 30");
  const std::vector<pid_t> pids = worker_pids();
  ASSERT_GT(pids[0], 0);
  ASSERT_GT(pids[1], 0);
  ASSERT_EQ(::kill(launcher->pid(), SIGTERM), 0);

  const std::optional<int> status = launcher->wait(15s);
  ASSERT_TRUE(status.has_value()) << "gradwire-run did not exit after SIGTERM";
  ASSERT_TRUE(WIFEXITED(*status)) << *status;
  EXPECT_EQ(WEXITSTATUS(*status), 128 + SIGTERM);
  EXPECT_TRUE(contains(err(), "received SIGTERM")) << err();
  for (pid_t pid : pids) EXPECT_TRUE(testing::process_gone(pid)) << "worker " << pid << " runs";
}

TEST_F(GradwireRunTest, SecondSignalKillsWithoutWaitingForTheGracePeriod) {
  // The workers survive SIGTERM (they only report it); the grace period (60 s) is longer than
  // the test may take, so only the second signal can end them.
  auto launcher = start_two_workers("while true; do sleep 30 & wait $!; done", "60",
                                    "trap 'echo got$RANK' TERM; ");
  const std::vector<pid_t> pids = worker_pids();
  ASSERT_GT(pids[0], 0);
  ASSERT_GT(pids[1], 0);
  ASSERT_EQ(::kill(launcher->pid(), SIGTERM), 0);
  // Standard signals do not queue: send the second one only once the first was forwarded.
  ASSERT_TRUE(testing::wait_until([&] {
    return contains(out(), "[rank 0] got0") && contains(out(), "[rank 1] got1");
  })) << out();
  ASSERT_EQ(::kill(launcher->pid(), SIGTERM), 0);

  const std::optional<int> status = launcher->wait(15s);
  ASSERT_TRUE(status.has_value()) << "gradwire-run did not exit after a second SIGTERM";
  ASSERT_TRUE(WIFEXITED(*status)) << *status;
  EXPECT_EQ(WEXITSTATUS(*status), 128 + SIGTERM);
  EXPECT_TRUE(contains(err(), "killed by signal 9 (SIGKILL)")) << err();
  for (pid_t pid : pids) EXPECT_TRUE(testing::process_gone(pid)) << "worker " << pid << " runs";
}

TEST_F(GradwireRunTest, SigintLetsWorkersShutDownGracefully) {
  // The background sleep ignores SIGINT (as background jobs of sh do); gradwire-run kills it
  // when its worker exits.
  auto launcher = start_two_workers("trap 'echo graceful$RANK; exit 0' INT; sleep 30 & echo $! > " +
                                    dir_.path() + "/child$RANK; wait");
  const std::vector<pid_t> pids = worker_pids();
  const pid_t child0 = testing::wait_for_pid_file(dir_.file("child0"));
  const pid_t child1 = testing::wait_for_pid_file(dir_.file("child1"));
  worker_pids_.insert(worker_pids_.end(), {child0, child1});
  ASSERT_EQ(::kill(launcher->pid(), SIGINT), 0);

  const std::optional<int> status = launcher->wait(15s);
  ASSERT_TRUE(status.has_value()) << "gradwire-run did not exit after SIGINT";
  ASSERT_TRUE(WIFEXITED(*status)) << *status;
  EXPECT_EQ(WEXITSTATUS(*status), 128 + SIGINT);
  EXPECT_TRUE(contains(out(), "[rank 0] graceful0")) << out();
  EXPECT_TRUE(contains(out(), "[rank 1] graceful1")) << out();
  for (pid_t pid : worker_pids_) {
    EXPECT_TRUE(testing::wait_until([&] { return testing::process_gone(pid); }, 5s))
        << "process " << pid << " still runs";
  }
}

TEST_F(GradwireRunTest, WorkersDieWhenLauncherIsKilled) {
  auto launcher = start_two_workers("exec sleep 30");
  const std::vector<pid_t> pids = worker_pids();
  ASSERT_GT(pids[0], 0);
  ASSERT_GT(pids[1], 0);
  ASSERT_EQ(::kill(launcher->pid(), SIGKILL), 0);
  const std::optional<int> status = launcher->wait(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFSIGNALED(*status));
  // PR_SET_PDEATHSIG: the kernel kills the orphaned workers at once.
  for (pid_t pid : pids) {
    EXPECT_TRUE(testing::wait_until([&] { return testing::process_gone(pid); }, 5s))
        << "worker " << pid << " outlived its launcher";
  }
}

TEST_F(GradwireRunTest, MaxRestartsRestartsAFailedGroupAndListsAttempts) {
  // Rank 1 fails on the first attempt only; rank 0 waits to be stopped on that attempt.
  const std::string script =
      "if [ \"$RANK\" = 1 ] && [ ! -e " + dir_.path() + "/marker ]; then touch " + dir_.path() +
      "/marker; exit 4; fi; if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then exec sleep 30; fi; "
      "echo \"restart $TORCHELASTIC_RESTART_COUNT of $TORCHELASTIC_MAX_RESTARTS\"";
  EXPECT_EQ(run({"--max-restarts", "1", "-n", "2", "/bin/sh", "-c", script}), 0) << err();
  EXPECT_TRUE(contains(err(), "exited with code 4; restarting the workers (restart 1 of 1)"))
      << err();
  EXPECT_TRUE(
      std::regex_search(err(), std::regex(R"(attempt 1 \(MASTER_PORT \d+\) failed: rank 1)")))
      << err();
  EXPECT_TRUE(contains(err(), ", the last) succeeded")) << err();
  EXPECT_TRUE(contains(out(), "[rank 0] restart 1 of 1")) << out();
  EXPECT_TRUE(contains(out(), "[rank 1] restart 1 of 1")) << out();
  EXPECT_EQ(run({"--max-restarts", "-1", "/bin/true"}), 2);
}

TEST_F(GradwireRunTest, SigtermNeverRestarts) {
  const std::string script = "echo start >> " + dir_.path() + "/starts$RANK; echo $$ > " +
                             dir_.path() + "/pid$RANK; exec sleep 30";
  auto launcher =
      std::make_unique<Child>(std::vector<std::string>{GRADWIRE_RUN_PATH, "--max-restarts", "3",
                                                       "-n", "2", "/bin/sh", "-c", script},
                              dir_.file("stdout"), dir_.file("stderr"));
  const std::vector<pid_t> pids = worker_pids();
  ASSERT_GT(pids[0], 0);
  ASSERT_GT(pids[1], 0);
  ASSERT_EQ(::kill(launcher->pid(), SIGTERM), 0);
  const std::optional<int> status = launcher->wait(15s);
  ASSERT_TRUE(status.has_value()) << "gradwire-run did not exit after SIGTERM";
  ASSERT_TRUE(WIFEXITED(*status)) << *status;
  EXPECT_EQ(WEXITSTATUS(*status), 128 + SIGTERM);
  EXPECT_FALSE(contains(err(), "restarting")) << err();
  EXPECT_EQ(read_file(dir_.file("starts0")), "start\n");
  EXPECT_EQ(read_file(dir_.file("starts1")), "start\n");
}

TEST_F(GradwireRunTest, SigtermWhileRestartingEndsTheLaunch) {
  // Rank 0 survives SIGTERM (it only reports it), so the launcher is still stopping the failed
  // group when the test signals it; the second signal kills at once.
  const std::string script =
      "echo start >> " + dir_.path() + "/starts$RANK; echo $$ > " + dir_.path() +
      "/pid$RANK; if [ \"$RANK\" = 1 ]; then i=0; while [ ! -s " + dir_.path() +
      "/ready ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; exit 3; fi; "
      "trap 'echo got$RANK' TERM; echo ready > " +
      dir_.path() + "/ready; while true; do sleep 30 & wait $!; done";
  Child launcher({GRADWIRE_RUN_PATH, "--max-restarts", "3", "--grace-period", "60", "-n", "2",
                  "/bin/sh", "-c", script},
                 dir_.file("stdout"), dir_.file("stderr"));
  worker_pids();
  ASSERT_TRUE(testing::wait_until([&] { return contains(out(), "[rank 0] got0"); })) << out();
  ASSERT_EQ(::kill(launcher.pid(), SIGTERM), 0);
  // Standard signals do not queue: send the second one only once the first was forwarded.
  ASSERT_TRUE(testing::wait_until([&] {
    const std::string text = out();
    return text.find("got0") != text.rfind("got0");
  })) << out();
  ASSERT_EQ(::kill(launcher.pid(), SIGTERM), 0);
  const std::optional<int> status = launcher.wait(15s);
  ASSERT_TRUE(status.has_value()) << "gradwire-run did not exit";
  ASSERT_TRUE(WIFEXITED(*status)) << *status;
  EXPECT_EQ(WEXITSTATUS(*status), 3) << err();  // rank 1's failure came first
  EXPECT_FALSE(contains(err(), "restarting")) << err();
  EXPECT_EQ(read_file(dir_.file("starts0")), "start\n");
  for (pid_t pid : worker_pids_) EXPECT_TRUE(testing::process_gone(pid)) << pid << " runs";
}

}  // namespace
}  // namespace gradwire::launch
