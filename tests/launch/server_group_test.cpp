// Unit tests of the pure parts of server supervision: the server command and its arguments, the
// servers' and trainers' environment, port planning and the readiness probe.
#include "launch/server_group.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <fstream>
#include <set>

#include "launch/worker_env.h"
#include "test_support.h"

namespace gradwire::launch::detail {
namespace {

using namespace std::chrono_literals;

// Enough cores for one process per server in every plan below that does not ask otherwise.
constexpr int kManyCores = 64;

TEST(ServerGroupTest, ServerArgvAppendsListen) {
  EXPECT_EQ(server_argv({"srv", "--threads", "2"}, "127.0.0.1:5000"),
            (std::vector<std::string>{"srv", "--threads", "2", "--listen", "127.0.0.1:5000"}));
  // One address as a list: the same argv, so one server per process runs as before.
  EXPECT_EQ(server_argv({"srv", "--threads", "2"}, std::vector<std::string>{"127.0.0.1:5000"}),
            server_argv({"srv", "--threads", "2"}, "127.0.0.1:5000"));
  EXPECT_EQ(
      server_argv({"srv"}, std::vector<std::string>{"h:1", "h:2", "h:3"}),
      (std::vector<std::string>{"srv", "--listen", "h:1", "--listen", "h:2", "--listen", "h:3"}));
}

TEST(ServerGroupTest, ServerCommandDefaultsToTheProgramBesideTheExecutable) {
  EXPECT_EQ(resolve_server_command({"my-server", "-v"}, "/nowhere/bin/gradwire-run"),
            (std::vector<std::string>{"my-server", "-v"}));
  testing::TempDir dir;
  // Not there: looked up on PATH.
  EXPECT_EQ(resolve_server_command({}, dir.file("gradwire-run")),
            (std::vector<std::string>{"gradwire-ps-server"}));
  EXPECT_EQ(resolve_server_command({}, ""), (std::vector<std::string>{"gradwire-ps-server"}));
  // There but not executable: still PATH.
  const std::string beside = dir.file("gradwire-ps-server");
  std::ofstream(beside) << "#!/bin/sh\n";
  ::chmod(beside.c_str(), 0644);
  EXPECT_EQ(resolve_server_command({}, dir.file("gradwire-run")),
            (std::vector<std::string>{"gradwire-ps-server"}));
  ::chmod(beside.c_str(), 0755);
  EXPECT_EQ(resolve_server_command({}, dir.file("gradwire-run")),
            (std::vector<std::string>{beside}));
  // Arguments without a program name: the default program with them.
  EXPECT_EQ(resolve_server_command({"", "--threads", "2"}, dir.file("gradwire-run")),
            (std::vector<std::string>{beside, "--threads", "2"}));
  EXPECT_EQ(resolve_server_command({"", "-v"}, ""),
            (std::vector<std::string>{"gradwire-ps-server", "-v"}));
}

TEST(ServerGroupTest, AddressesAndTheirList) {
  EXPECT_EQ(host_port("127.0.0.1", 80), "127.0.0.1:80");
  EXPECT_EQ(host_port("::1", 80), "[::1]:80");
  EXPECT_EQ(host_port("node3", 7), "node3:7");
  EXPECT_EQ(join_addresses({"a:1", "b:2", "c:3"}), "a:1,b:2,c:3");
  EXPECT_EQ(join_addresses({}), "");
}

WorkerEnvContext context_with_servers(std::map<std::string, std::string> parent) {
  WorkerEnvContext context;
  context.parent = EnvMap(std::move(parent));
  context.master_port = 29500;
  context.fresh_run_id = "run";
  context.fresh_job_token = "fresh-token";
  context.server_addresses = {"127.0.0.1:7001", "127.0.0.1:7002"};
  return context;
}

LaunchOptions options_with_servers() {
  LaunchOptions options;
  options.command = {"train"};
  options.nproc_per_node = 2;
  options.servers = 2;
  return options;
}

TEST(ServerGroupTest, TrainersAndServersShareOneToken) {
  const LaunchOptions options = options_with_servers();
  // A stale GRADWIRE_TOKEN of the caller is replaced by the job token everywhere.
  const WorkerEnvContext context =
      context_with_servers({{"HOME", "/home/me"}, {"GRADWIRE_TOKEN", "stale"}});
  const auto trainer = worker_env(options, context, 1);
  EXPECT_EQ(trainer.at("GRADWIRE_PS_ADDRS"), "127.0.0.1:7001,127.0.0.1:7002");
  EXPECT_EQ(trainer.at("GRADWIRE_TOKEN"), "fresh-token");
  EXPECT_EQ(trainer.at("GRADWIRE_JOB_TOKEN"), "fresh-token");

  const auto server = server_env(options, context);
  EXPECT_EQ(server.at("GRADWIRE_TOKEN"), "fresh-token");
  EXPECT_EQ(server.at("GRADWIRE_JOB_TOKEN"), "fresh-token");
  EXPECT_EQ(server.at("GRADWIRE_PS_ADDRS"), "127.0.0.1:7001,127.0.0.1:7002");
  EXPECT_EQ(server.at("HOME"), "/home/me");
  EXPECT_EQ(server.count("RANK"), 0u);  // servers are not ranks of the job
}

TEST(ServerGroupTest, InheritedOrExtraJobTokenIsSharedToo) {
  LaunchOptions options = options_with_servers();
  const WorkerEnvContext inherited = context_with_servers({{"GRADWIRE_JOB_TOKEN", "exported"}});
  EXPECT_EQ(worker_env(options, inherited, 0).at("GRADWIRE_TOKEN"), "exported");
  EXPECT_EQ(server_env(options, inherited).at("GRADWIRE_TOKEN"), "exported");

  options.extra_env["GRADWIRE_JOB_TOKEN"] = "extra";
  EXPECT_EQ(worker_env(options, inherited, 0).at("GRADWIRE_TOKEN"), "extra");
  EXPECT_EQ(server_env(options, inherited).at("GRADWIRE_TOKEN"), "extra");
}

TEST(ServerGroupTest, WithoutServersTrainersGetNoServerVariables) {
  LaunchOptions options = options_with_servers();
  options.servers = 0;
  WorkerEnvContext context = context_with_servers({{"GRADWIRE_TOKEN", "mine"}});
  context.server_addresses.clear();
  const auto env = worker_env(options, context, 0);
  EXPECT_EQ(env.count("GRADWIRE_PS_ADDRS"), 0u);
  EXPECT_EQ(env.at("GRADWIRE_TOKEN"), "mine");  // inherited untouched
}

TEST(ServerGroupTest, ValidationOfServerOptions) {
  LaunchOptions options = options_with_servers();
  EXPECT_NO_THROW(validate_launch_options(options));
  options.servers = -1;
  EXPECT_THROW(validate_launch_options(options), InvalidArgument);
  options = options_with_servers();
  options.nnodes = 2;
  options.master_port = 29500;
  try {
    validate_launch_options(options);
    FAIL() << "servers with two nodes must be refused";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("multi-node jobs"), std::string::npos) << error.what();
  }
  options = options_with_servers();
  options.server_host = "";
  EXPECT_THROW(validate_launch_options(options), InvalidArgument);
  options = options_with_servers();
  options.server_ready_timeout = 0ms;
  EXPECT_THROW(validate_launch_options(options), InvalidArgument);
}

TEST(ServerGroupTest, TlsCertificateIsTheTrainersRoot) {
  LaunchOptions options = options_with_servers();
  options.tls_cert_file = "/certs/server.pem";
  options.tls_key_file = "/certs/server.key";
  const WorkerEnvContext context = context_with_servers({{"GRADWIRE_TLS_ROOTS", "/old.pem"}});
  EXPECT_EQ(worker_env(options, context, 1).at("GRADWIRE_TLS_ROOTS"), "/certs/server.pem");
  // Servers get the files on their command line, not in their environment.
  EXPECT_EQ(server_env(options, context).at("GRADWIRE_TLS_ROOTS"), "/old.pem");

  // Plain-text servers: an inherited root would make the trainers try TLS against them.
  options.tls_cert_file.clear();
  options.tls_key_file.clear();
  EXPECT_EQ(worker_env(options, context, 0).count("GRADWIRE_TLS_ROOTS"), 0u);
  // Without servers the launcher says nothing about TLS: the value is inherited untouched.
  options.servers = 0;
  WorkerEnvContext no_servers = context;
  no_servers.server_addresses.clear();
  EXPECT_EQ(worker_env(options, no_servers, 0).at("GRADWIRE_TLS_ROOTS"), "/old.pem");
}

// validate_launch_options(options) throws InvalidArgument whose message contains `part`.
void expect_refused(const LaunchOptions& options, const std::string& part) {
  try {
    validate_launch_options(options);
    ADD_FAILURE() << "expected InvalidArgument containing '" << part << "'";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find(part), std::string::npos) << error.what();
  }
}

TEST(ServerProcessesTest, ValidationOfServerProcesses) {
  LaunchOptions options;
  options.command = {"train"};
  options.servers = 4;
  for (int processes : {0, 1, 4}) {
    options.server_processes = processes;
    EXPECT_NO_THROW(validate_launch_options(options)) << processes;
  }
  options.server_processes = 5;
  expect_refused(options, "must be 0 (automatic) or in [1, servers] = [1, 4], got 5");
  options.server_processes = -1;
  expect_refused(options, "got -1");
  options.servers = 0;
  options.server_processes = 1;
  expect_refused(options, "pass it with --servers");
}

TEST(ServerGroupTest, ValidationOfTlsOptions) {
  LaunchOptions options = options_with_servers();
  options.tls_cert_file = "cert.pem";
  options.tls_key_file = "key.pem";
  EXPECT_NO_THROW(validate_launch_options(options));
  options.tls_key_file.clear();
  expect_refused(options, "--tls-cert (tls_cert_file) needs --tls-key");
  options.tls_key_file = "key.pem";
  options.tls_cert_file.clear();
  expect_refused(options, "--tls-key (tls_key_file) needs --tls-cert");
  options.tls_cert_file = "cert.pem";
  options.servers = 0;
  expect_refused(options, "pass them with --servers");
}

TEST(ServerGroupTest, PlanPassesTlsFilesAfterTheServerArguments) {
  testing::TempDir dir;
  const std::string cert = dir.file("cert.pem");
  const std::string key = dir.file("key.pem");
  std::ofstream(cert) << "certificate\n";
  std::ofstream(key) << "key\n";
  LaunchOptions options = options_with_servers();
  options.server_command = {"srv", "--threads", "2"};
  options.tls_cert_file = cert;
  options.tls_key_file = key;
  const ServerPlan plan = plan_servers(options, 0, kManyCores);
  EXPECT_EQ(plan.command, (std::vector<std::string>{"srv", "--threads", "2", "--tls-cert", cert,
                                                    "--tls-key", key}));
  EXPECT_EQ(server_argv(plan.command, plan.addresses[1]),
            (std::vector<std::string>{"srv", "--threads", "2", "--tls-cert", cert, "--tls-key", key,
                                      "--listen", plan.addresses[1]}));

  // Files that cannot be read are refused naming their flag, before anything starts.
  auto expect_unreadable = [&](const std::string& flag, const std::string& part) {
    try {
      plan_servers(options, 0, kManyCores);
      ADD_FAILURE() << "expected InvalidArgument for " << flag;
    } catch (const InvalidArgument& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(flag + " file '"), std::string::npos) << message;
      EXPECT_NE(message.find(part), std::string::npos) << message;
    }
  };
  options.tls_key_file = dir.file("missing.key");
  expect_unreadable("--tls-key", "No such file or directory");
  options.tls_key_file = key;
  options.tls_cert_file = dir.path();
  expect_unreadable("--tls-cert", "it is a directory");
}

TEST(ServerGroupTest, PlanPicksDistinctPortsAvoidingTheMasterPort) {
  LaunchOptions options = options_with_servers();
  options.servers = 4;
  options.server_command = {"srv"};
  const int master_port = pick_free_port();
  const ServerPlan plan = plan_servers(options, master_port, kManyCores);
  EXPECT_EQ(plan.command, (std::vector<std::string>{"srv"}));
  ASSERT_EQ(plan.ports.size(), 4u);
  const std::set<int> distinct(plan.ports.begin(), plan.ports.end());
  EXPECT_EQ(distinct.size(), 4u);
  EXPECT_EQ(distinct.count(master_port), 0u);
  for (size_t i = 0; i < plan.ports.size(); ++i) {
    EXPECT_EQ(plan.addresses[i], "127.0.0.1:" + std::to_string(plan.ports[i]));
  }
  // With the cores to spare: one process per server, each argv as before.
  ASSERT_EQ(plan.processes, (std::vector<std::vector<int>>{{0}, {1}, {2}, {3}}));
  for (size_t p = 0; p < 4; ++p) {
    EXPECT_EQ(process_addresses(plan, p), std::vector<std::string>{plan.addresses[p]});
    EXPECT_EQ(process_argv(plan, p), server_argv(plan.command, plan.addresses[p]));
  }
  EXPECT_EQ(server_log_names(plan), (std::vector<std::string>{"server_0.log", "server_1.log",
                                                              "server_2.log", "server_3.log"}));
  options.servers = 0;
  EXPECT_TRUE(plan_servers(options, master_port, kManyCores).addresses.empty());
  EXPECT_TRUE(plan_servers(options, master_port, kManyCores).processes.empty());
  options.servers = 1;
  options.server_host = "no-such-host.invalid";
  EXPECT_THROW(plan_servers(options, master_port, kManyCores), InvalidArgument);
}

TEST(ServerGroupTest, PlanGroupsServersIntoProcesses) {
  LaunchOptions options = options_with_servers();  // 2 trainers
  options.servers = 4;
  options.server_command = {"srv", "-v"};
  options.server_processes = 2;
  const ServerPlan plan = plan_servers(options, 0, kManyCores);
  ASSERT_EQ(plan.addresses.size(), 4u);  // GRADWIRE_PS_ADDRS still lists every server
  ASSERT_EQ(plan.processes, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(process_addresses(plan, 1),
            (std::vector<std::string>{plan.addresses[2], plan.addresses[3]}));
  EXPECT_EQ(process_argv(plan, 0),
            (std::vector<std::string>{"srv", "-v", "--listen", plan.addresses[0], "--listen",
                                      plan.addresses[1]}));
  EXPECT_EQ(server_log_names(plan),
            (std::vector<std::string>{"servers_0-1.log", "servers_2-3.log"}));

  // Automatic: 2 trainers + 4 servers on 3 cores leave 1 core: one process for all four.
  options.server_processes = 0;
  EXPECT_EQ(plan_servers(options, 0, 3).processes, (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
  // 5 cores leave 3: three processes, split as evenly as possible.
  const ServerPlan three = plan_servers(options, 0, 5);
  EXPECT_EQ(three.processes, (std::vector<std::vector<int>>{{0}, {1}, {2, 3}}));
  EXPECT_EQ(server_log_names(three),
            (std::vector<std::string>{"server_0.log", "server_1.log", "servers_2-3.log"}));
  // 6 cores hold them all: today's layout.
  EXPECT_EQ(plan_servers(options, 0, 6).processes.size(), 4u);
}

TEST(ServerGroupTest, ReadinessProbeSeesAListeningPort) {
  const int port = pick_free_port();
  EXPECT_FALSE(accepts_connections("127.0.0.1", port, 200ms));
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(listener.get(), 4), 0);
  EXPECT_TRUE(accepts_connections("127.0.0.1", port, 200ms));
  EXPECT_FALSE(accepts_connections("no-such-host.invalid", port, 200ms));
}

}  // namespace
}  // namespace gradwire::launch::detail
