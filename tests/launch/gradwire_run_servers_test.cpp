// The gradwire-run executable with parameter servers: the server and TLS flags, a server failing
// or never accepting connections, a SIGKILLed server restarted with --max-restarts (and ending
// the launch without), and servers stopped with the trainers or dying with a SIGKILLed launcher.
// Uses the stand-in server of fake_ps_server.cpp.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
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
  // The pids "[server 0] pid=N" lines name, oldest first.
  std::vector<pid_t> printed_server_pids() const {
    std::vector<pid_t> pids;
    const std::string text = out();
    const std::regex pid_line(R"(\[server 0\] pid=(\d+))");
    for (std::sregex_iterator it(text.begin(), text.end(), pid_line), end; it != end; ++it) {
      pids.push_back(std::stoi((*it)[1]));
    }
    return pids;
  }
  // Starts gradwire-run with one fake server and 2 workers (extra launcher flags `flags`) whose
  // first attempt writes DIR/pid<rank> and sleeps, and whose later attempts greet the server and
  // print "restart N addrs=ADDRS"; SIGKILLs the server once both workers run. Returns the
  // launcher's exit status (-1 if it did not exit within 30 s) and stores the killed server's
  // pid in killed_server_ and its address in server_address_.
  int kill_the_server_while_workers_run(const std::vector<std::string>& flags) {
    const std::string script =
        "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then echo $$ > " + dir_.path() +
        "/pid$RANK; exec sleep 30; fi; " + FAKE_PS_SERVER_PATH +
        " --send \"$GRADWIRE_PS_ADDRS\" \"again $RANK\" && "
        "echo \"restart $TORCHELASTIC_RESTART_COUNT addrs=$GRADWIRE_PS_ADDRS\"";
    std::vector<std::string> argv{GRADWIRE_RUN_PATH,   "--servers", "1", "--server-program",
                                  FAKE_PS_SERVER_PATH, "-n",        "2"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"/bin/sh", "-c", script});
    Child launcher(argv, dir_.file("stdout"), dir_.file("stderr"));
    for (pid_t pid : worker_pids()) {
      if (pid <= 0) ADD_FAILURE() << "a worker did not start: " << out() << err();
    }
    // The server's lines may be copied after the workers started.
    const bool listening = testing::wait_until([&] {
      std::smatch match;
      const std::string text = out();
      if (!std::regex_search(text, match,
                             std::regex(R"(\[server 0\] gradwire-ps-server listening on (\S+))"))) {
        return false;
      }
      server_address_ = match[1];
      return true;
    });
    if (!listening) {
      ADD_FAILURE() << "the server did not say it listens:\n" << out();
      return -1;
    }
    killed_server_ = printed_server_pids().at(0);
    worker_pids_.push_back(killed_server_);
    EXPECT_EQ(::kill(killed_server_, SIGKILL), 0);
    const std::optional<int> status = launcher.wait(30s);
    for (pid_t pid : printed_server_pids()) worker_pids_.push_back(pid);
    if (!status || !WIFEXITED(*status)) {
      ADD_FAILURE() << "gradwire-run did not exit normally within 30 s";
      return -1;
    }
    return WEXITSTATUS(*status);
  }

  pid_t killed_server_ = -1;
  std::string server_address_;
};

TEST_F(GradwireRunServersTest, ServersFlagsStartServersBesideTheTrainers) {
  const std::string fake = FAKE_PS_SERVER_PATH;
  // One process per server whatever this host's cores (automatic would group them on few).
  ASSERT_EQ(run({"--servers", "2", "--server-processes", "2", "--server-program", fake,
                 "--server-arg=--tag", "--server-arg", "x", "-n", "2", "/bin/sh", "-c",
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

TEST_F(GradwireRunServersTest, ServerProcessesFlagGroupsTheServers) {
  // 3 servers over 2 processes: server 0 alone, servers 1 and 2 together.
  const std::string fake = FAKE_PS_SERVER_PATH;
  ASSERT_EQ(
      run({"--servers", "3", "--server-processes", "2", "--server-program", fake, "/bin/sh", "-c",
           fake + " --send \"$GRADWIRE_PS_ADDRS\" \"hi $RANK\" && "
                  "echo \"addrs=$GRADWIRE_PS_ADDRS\""}),
      0)
      << out() << err();
  const std::string text = out();
  std::smatch match;
  ASSERT_TRUE(std::regex_search(text, match, std::regex(R"(\[rank 0\] addrs=(\S+),(\S+),(\S+))")))
      << text;
  EXPECT_TRUE(contains(text, "[server 0] args: --listen " + match[1].str() + "\n")) << text;
  EXPECT_TRUE(contains(text, "[servers 1-2] args: --listen " + match[2].str() + " --listen " +
                                 match[3].str() + "\n"))
      << text;
  EXPECT_TRUE(contains(text, "[server 0] received: hi 0")) << text;
  EXPECT_TRUE(contains(text, "[servers 1-2] received: hi 0")) << text;
  EXPECT_TRUE(contains(text, "[servers 1-2] stopping on SIGTERM")) << text;
  EXPECT_EQ(err(), "");
}

TEST_F(GradwireRunServersTest, ServerProcessesUsageErrors) {
  EXPECT_EQ(run({"--servers", "2", "--server-processes", "3", "/bin/true"}), 2);
  EXPECT_TRUE(contains(err(), "must be 0 (automatic) or in [1, servers] = [1, 2], got 3")) << err();
  EXPECT_EQ(run({"--server-processes", "1", "/bin/true"}), 2);
  EXPECT_TRUE(contains(err(), "pass it with --servers")) << err();
  EXPECT_EQ(run({"--servers", "2", "--server-processes", "-1", "/bin/true"}), 2);
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

TEST_F(GradwireRunServersTest, TlsFlagsReachTheServersAndTheTrainers) {
  const std::string cert = dir_.file("cert.pem");
  const std::string key = dir_.file("key.pem");
  std::ofstream(cert) << "certificate\n";
  std::ofstream(key) << "key\n";
  ASSERT_EQ(run({"--servers", "1", "--server-program", FAKE_PS_SERVER_PATH, "--server-arg=--tag",
                 "--server-arg", "x", "--tls-cert", cert, "--tls-key", key, "-n", "2", "/bin/sh",
                 "-c", "echo \"roots=$GRADWIRE_TLS_ROOTS addrs=$GRADWIRE_PS_ADDRS\""}),
            0)
      << out() << err();
  const std::string text = out();
  std::smatch match;
  ASSERT_TRUE(std::regex_search(text, match, std::regex(R"(\[rank 0\] roots=\S+ addrs=(\S+))")))
      << text;
  const std::string address = match[1];
  EXPECT_TRUE(contains(text, "[server 0] args: --tag x --tls-cert " + cert + " --tls-key " + key +
                                 " --listen " + address + "\n"))
      << text;
  EXPECT_TRUE(contains(text, "[rank 0] roots=" + cert + " ")) << text;
  EXPECT_TRUE(contains(text, "[rank 1] roots=" + cert + " ")) << text;
}

TEST_F(GradwireRunServersTest, TlsUsageErrorsExit2NamingTheFlag) {
  const std::string cert = dir_.file("cert.pem");
  const std::string key = dir_.file("key.pem");
  std::ofstream(cert) << "certificate\n";
  std::ofstream(key) << "key\n";
  const std::vector<std::string> servers{"--servers", "1", "--server-program", FAKE_PS_SERVER_PATH};
  auto refused = [&](std::vector<std::string> args, const std::string& message) {
    args.insert(args.end(), {"/bin/sh", "-c", "echo trainer ran"});
    EXPECT_EQ(run(args), 2) << message;
    EXPECT_TRUE(contains(err(), message)) << err();
    EXPECT_FALSE(contains(out(), "trainer ran")) << out();
    EXPECT_FALSE(contains(out(), "[server 0]")) << out();
  };
  std::vector<std::string> args = servers;
  args.insert(args.end(), {"--tls-cert", cert});
  refused(args, "--tls-cert (tls_cert_file) needs --tls-key");
  args = servers;
  args.insert(args.end(), {"--tls-key", key});
  refused(args, "--tls-key (tls_key_file) needs --tls-cert");
  refused({"--tls-cert", cert, "--tls-key", key}, "pass them with --servers");
  args = servers;
  args.insert(args.end(), {"--tls-cert", dir_.file("missing.pem"), "--tls-key", key});
  refused(args, "--tls-cert file '" + dir_.file("missing.pem") + "' cannot be read");
  args = servers;
  args.insert(args.end(), {"--tls-cert", cert, "--tls-key", dir_.file("missing.key")});
  refused(args, "--tls-key file '" + dir_.file("missing.key") + "' cannot be read");
}

TEST_F(GradwireRunServersTest, KilledServerIsRestartedOnItsPortWithMaxRestarts) {
  ASSERT_EQ(kill_the_server_while_workers_run({"--max-restarts", "1"}), 0) << out() << err();
  const std::vector<pid_t> servers = printed_server_pids();
  ASSERT_EQ(servers.size(), 2u) << out();
  EXPECT_EQ(servers[0], killed_server_);
  EXPECT_NE(servers[1], killed_server_);
  const std::string text = out();
  const std::string listening = "[server 0] gradwire-ps-server listening on " + server_address_;
  EXPECT_NE(text.find(listening), text.rfind(listening)) << "listened once only:\n" << text;
  EXPECT_TRUE(contains(text, "[server 0] received: again 0")) << text;
  // The restarted server knows it is one (its timeline file is named after its restart).
  EXPECT_TRUE(contains(text, "[server 0] restart_count=\n")) << text;
  EXPECT_TRUE(contains(text, "[server 0] restart_count=1\n")) << text;
  EXPECT_TRUE(contains(text, "[rank 0] restart 1 addrs=" + server_address_ + "\n")) << text;
  EXPECT_TRUE(contains(text, "[rank 1] restart 1 addrs=" + server_address_ + "\n")) << text;
  const std::string server =
      "server 0 (" + server_address_ + ", pid " + std::to_string(killed_server_) + ")";
  EXPECT_TRUE(contains(err(), "gradwire-run: " + server +
                                  " killed by signal 9 (SIGKILL) while the trainers ran; "
                                  "restarting it and the workers (restart 1 of 1)\n"))
      << err();
  EXPECT_TRUE(contains(err(), ") failed: " + server +
                                  " killed by signal 9 (SIGKILL) while the trainers ran; the "
                                  "server and the workers were restarted\n"))
      << err();
  EXPECT_TRUE(contains(err(), ", the last) succeeded")) << err();
  for (pid_t pid : worker_pids_) EXPECT_TRUE(testing::process_gone(pid)) << pid << " runs";
}

TEST_F(GradwireRunServersTest, KilledServerEndsTheLaunchWithoutMaxRestarts) {
  EXPECT_EQ(kill_the_server_while_workers_run({}), 128 + SIGKILL) << out() << err();
  EXPECT_EQ(printed_server_pids().size(), 1u) << out();
  EXPECT_TRUE(contains(err(), "gradwire-run: server 0 (" + server_address_ + ", pid " +
                                  std::to_string(killed_server_) +
                                  ") killed by signal 9 (SIGKILL) while the trainers ran\n"))
      << err();
  EXPECT_FALSE(contains(err(), "restarting")) << err();
  EXPECT_FALSE(contains(out(), "restart 1")) << out();
  for (pid_t pid : worker_pids_) EXPECT_TRUE(testing::process_gone(pid)) << pid << " runs";
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
