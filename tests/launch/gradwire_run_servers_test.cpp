// The gradwire-run executable with parameter servers: the server flags, a server failing or
// never accepting connections, and servers stopped with the trainers or dying with a SIGKILLed
// launcher. Uses the stand-in server of fake_ps_server.cpp.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "gradwire_run_fixture.h"
#include "test_support.h"

namespace gradwire::launch {
namespace {

using namespace std::chrono_literals;
using testing::Child;
using testing::contains;

class GradwireRunServersTest : public testing::GradwireRunTest {
 protected:
  // Starts gradwire-run with one fake server and 2 workers that write their pid to DIR/pid<rank>
  // and sleep; returns once the workers and the server run (their pids are in worker_pids_).
  std::unique_ptr<Child> start_with_a_server() {
    const std::string script = "echo $$ > " + dir_.path() + "/pid$RANK; exec sleep 30";
    auto launcher = std::make_unique<Child>(
        std::vector<std::string>{GRADWIRE_RUN_PATH, "--servers", "1", "--server-program",
                                 FAKE_PS_SERVER_PATH, "-n", "2", "/bin/sh", "-c", script},
        dir_.file("stdout"), dir_.file("stderr"));
    worker_pids();
    pid_t server = -1;
    testing::wait_until([&] {
      std::smatch match;
      const std::string text = out();
      if (!std::regex_search(text, match, std::regex(R"(\[server 0\] pid=(\d+))"))) return false;
      server = std::stoi(match[1]);
      return true;
    });
    worker_pids_.push_back(server);
    return launcher;
  }
};

TEST_F(GradwireRunServersTest, ServersFlagsStartServersBesideTheTrainers) {
  const std::string fake = FAKE_PS_SERVER_PATH;
  ASSERT_EQ(run({"--servers", "2", "--server-program", fake, "--server-arg=--tag", "--server-arg",
                 "x", "-n", "2", "/bin/sh", "-c",
                 fake + " --send \"$GRADWIRE_PS_ADDRS\" \"hi $RANK\" && "
                        "echo \"addrs=$GRADWIRE_PS_ADDRS\""}),
            0)
      << out() << err();
  const std::string text = out();
  std::smatch match;
  ASSERT_TRUE(std::regex_search(text, match, std::regex(R"(\[rank 0\] addrs=(\S+),(\S+))")))
      << text;
  const std::string addresses[] = {match[1], match[2]};
  EXPECT_NE(addresses[0], addresses[1]);
  EXPECT_TRUE(contains(text, "[rank 1] addrs=" + addresses[0] + "," + addresses[1])) << text;
  for (int index = 0; index < 2; ++index) {
    const std::string prefix = "[server " + std::to_string(index) + "] ";
    EXPECT_TRUE(contains(text, prefix + "args: --tag x --listen " + addresses[index] + "\n"))
        << text;
    EXPECT_TRUE(contains(text, prefix + "received: hi 0")) << text;
    EXPECT_TRUE(contains(text, prefix + "received: hi 1")) << text;
    EXPECT_TRUE(contains(text, prefix + "stopping on SIGTERM")) << text;
  }
  EXPECT_EQ(err(), "");
}

TEST_F(GradwireRunServersTest, ServerHostFlagSetsTheAddresses) {
  ASSERT_EQ(run({"--servers", "1", "--server-program", FAKE_PS_SERVER_PATH, "--server-host",
                 "localhost", "/bin/sh", "-c", "echo \"addrs=$GRADWIRE_PS_ADDRS\""}),
            0)
      << err();
  EXPECT_TRUE(std::regex_search(out(), std::regex(R"(\[rank 0\] addrs=localhost:\d+\n)"))) << out();
}

TEST_F(GradwireRunServersTest, ServerFailingAtStartExits1NamingIt) {
  EXPECT_EQ(run({"--servers", "1", "--server-program", FAKE_PS_SERVER_PATH, "--server-arg=--mode",
                 "--server-arg", "exit-at-once", "/bin/sh", "-c", "echo trainer ran"}),
            1);
  EXPECT_TRUE(contains(err(), "[server 0] fake server: failing at once")) << err();
  EXPECT_TRUE(contains(err(), "gradwire-run: server 0 (127.0.0.1:")) << err();
  EXPECT_TRUE(contains(err(), "exited with code 1 before accepting connections")) << err();
  EXPECT_FALSE(contains(out(), "trainer ran")) << out();
}

TEST_F(GradwireRunServersTest, ServerReadyTimeoutFlag) {
  EXPECT_EQ(run({"--servers", "1", "--server-program", FAKE_PS_SERVER_PATH, "--server-arg=--mode",
                 "--server-arg=never-listen", "--server-ready-timeout", "300ms", "/bin/true"}),
            1);
  EXPECT_TRUE(contains(err(), "did not accept connections within 300 ms")) << err();
}

TEST_F(GradwireRunServersTest, ServerUsageErrors) {
  EXPECT_EQ(run({"--servers", "1", "--nnodes", "2", "--master-port", "29999", "/bin/true"}), 2);
  EXPECT_TRUE(contains(err(), "multi-node jobs start their parameter servers themselves")) << err();
  EXPECT_EQ(run({"--servers", "-1", "/bin/true"}), 2);
  EXPECT_EQ(run({"--servers", "1", "--server-ready-timeout", "soon", "/bin/true"}), 2);
  EXPECT_EQ(run({"--servers", "1", "--server-program", "gradwire-no-such-server", "/bin/true"}),
            127);
  EXPECT_TRUE(contains(err(), "could not execute gradwire-no-such-server")) << err();
}

TEST_F(GradwireRunServersTest, SigtermStopsServersAndTrainers) {
  auto launcher = start_with_a_server();
  ASSERT_EQ(worker_pids_.size(), 3u);
  for (pid_t pid : worker_pids_) ASSERT_GT(pid, 0) << out();
  ASSERT_EQ(::kill(launcher->pid(), SIGTERM), 0);
  const std::optional<int> status = launcher->wait(15s);
  ASSERT_TRUE(status.has_value()) << "gradwire-run did not exit after SIGTERM";
  ASSERT_TRUE(WIFEXITED(*status)) << *status;
  EXPECT_EQ(WEXITSTATUS(*status), 128 + SIGTERM);
  EXPECT_TRUE(contains(out(), "[server 0] stopping on SIGTERM")) << out();
  for (pid_t pid : worker_pids_) EXPECT_TRUE(testing::process_gone(pid)) << pid << " runs";
}

TEST_F(GradwireRunServersTest, ServersDieWhenLauncherIsKilled) {
  auto launcher = start_with_a_server();
  ASSERT_EQ(worker_pids_.size(), 3u);
  for (pid_t pid : worker_pids_) ASSERT_GT(pid, 0) << out();
  ASSERT_EQ(::kill(launcher->pid(), SIGKILL), 0);
  ASSERT_TRUE(launcher->wait(10s).has_value());
  for (pid_t pid : worker_pids_) {
    EXPECT_TRUE(testing::wait_until([&] { return testing::process_gone(pid); }, 5s))
        << "process " << pid << " outlived its launcher";
  }
}

}  // namespace
}  // namespace gradwire::launch
