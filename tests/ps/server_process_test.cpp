// gradwire-ps-server as a real process: the "listening on" line, calls with the token from a
// file, SIGKILL and a restart that continues from the checkpoint with identical tables, SIGTERM
// shutting down with a checkpoint, several servers in one process (--listen repeated), a missing
// token, the plaintext warning beyond loopback, the
// limit flags; in-process: the token's sources and a TLS server.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "../launch/test_support.h"
#include "../rpc/test_certificates.h"
#include "gradwire/common/error.h"
#include "gradwire/ps/server.h"
#include "ps/core/checkpoint.h"
#include "ps/server/server_checkpoints.h"
#include "server_test_support.h"

namespace gradwire::ps {
namespace {

using namespace std::chrono_literals;
using launch::testing::Child;
using launch::testing::read_file;
using launch::testing::TempDir;
using launch::testing::wait_until;
using testing::ids_tensor;
using testing::ServerClient;
using testing::table_config;

constexpr char kListening[] = "gradwire-ps-server listening on ";

class ServerProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("GRADWIRE_TOKEN");
    ::unsetenv("GRADWIRE_JOB_TOKEN");
    std::ofstream(dir_.file("token")) << testing::kToken << "\n";
    ::chmod(dir_.file("token").c_str(), 0600);  // a token file others can read is refused
  }

  // Starts the server on `listen` with `args` after the defaults; returns its address once it
  // printed the listening line (empty when it did not within 20 s).
  std::string start(const std::vector<std::string>& args, int run,
                    const std::string& listen = "127.0.0.1:0") {
    std::vector<std::string> argv{GRADWIRE_PS_SERVER_PATH, "--listen", listen};
    argv.insert(argv.end(), args.begin(), args.end());
    out_ = dir_.file("out" + std::to_string(run));
    err_ = dir_.file("err" + std::to_string(run));
    child_ = std::make_unique<Child>(argv, out_, err_);
    std::string address;
    wait_until(
        [&] {
          const std::string text = read_file(out_);
          const size_t at = text.find(kListening);
          const size_t end = text.find('\n', at);
          if (at == std::string::npos || end == std::string::npos) return false;
          address = text.substr(at + sizeof(kListening) - 1, end - at - (sizeof(kListening) - 1));
          return true;
        },
        20s);
    return address;
  }

  TempDir dir_;
  std::unique_ptr<Child> child_;
  std::string out_;
  std::string err_;
};

TEST_F(ServerProcessTest, KilledServerRestartsFromItsCheckpointWithIdenticalTables) {
  const std::string checkpoints = dir_.file("checkpoints");
  const std::vector<std::string> args{"--token-file", dir_.file("token"), "--checkpoint-dir",
                                      checkpoints};
  const std::string address = start(args, 0);
  ASSERT_FALSE(address.empty()) << read_file(err_);
  EXPECT_EQ(read_file(out_), kListening + address + "\n");

  TableConfig config = table_config("emb", 20, 8, UpdateMode::kSync, 1);
  config.optimizer.kind = OptimizerKind::kAdam;
  config.optimizer.lr = 0.05;
  const at::Tensor all = at::arange(20, at::kLong);
  at::Tensor trained;
  {
    ServerClient client(address);
    ASSERT_TRUE(client.create(config).ok());
    for (int64_t step = 0; step < 3; ++step) {
      ASSERT_TRUE(client.push("emb", 0, step, ids_tensor({3, 7, 3}), at::randn({3, 8})).ok());
      ASSERT_TRUE(client.step("emb", 0, step).ok());
    }
    trained = client.rows("emb", all);
    ASSERT_TRUE(client.checkpoint().ok());
  }
  const pid_t first = child_->pid();
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  const std::optional<int> killed = child_->wait(10s);
  ASSERT_TRUE(killed && WIFSIGNALED(*killed) && WTERMSIG(*killed) == SIGKILL);
  EXPECT_TRUE(launch::testing::process_gone(first));

  const std::string restarted = start(args, 1);
  ASSERT_FALSE(restarted.empty()) << read_file(err_);
  {
    ServerClient client(restarted);
    v1::CreateTableResponse response;
    ASSERT_TRUE(client.create(config, 0, 1, &response).ok());
    EXPECT_EQ(response.step(), 3);
    EXPECT_TRUE(at::equal(client.rows("emb", all), trained));
    ASSERT_TRUE(client.push("emb", 0, 3, ids_tensor({1}), at::ones({1, 8})).ok());
    ASSERT_TRUE(client.step("emb", 0, 3).ok());
  }
  // SIGTERM: a checkpoint (step 4) and exit 0.
  const pid_t second = child_->pid();
  ASSERT_EQ(::kill(second, SIGTERM), 0);
  const std::optional<int> stopped = child_->wait(20s);
  ASSERT_TRUE(stopped.has_value()) << "the server did not stop after SIGTERM";
  EXPECT_TRUE(WIFEXITED(*stopped) && WEXITSTATUS(*stopped) == 0) << read_file(err_);
  EXPECT_TRUE(launch::testing::process_gone(second));
  EXPECT_EQ(read_checkpoint(checkpoints + "/" + generation_file_name("emb", 0, 1, 4)).step, 4);
}

// --listen given three times: three servers in one process, a listening line each in order, each
// serving its own shard; SIGTERM stops them all with a checkpoint each. The same port twice is a
// usage error before any line is printed.
TEST_F(ServerProcessTest, SeveralListenAddressesRunOneServerEachInOneProcess) {
  const std::string checkpoints = dir_.file("checkpoints");
  ASSERT_FALSE(start({"--token-file", dir_.file("token"), "--checkpoint-dir", checkpoints,
                      "--listen", "127.0.0.1:0", "--listen", "127.0.0.1:0"},
                     0)
                   .empty())
      << read_file(err_);
  std::vector<std::string> addresses;
  wait_until(
      [&] {
        addresses.clear();
        std::istringstream lines(read_file(out_));
        for (std::string line; std::getline(lines, line);) {
          if (line.rfind(kListening, 0) != 0) return false;
          addresses.push_back(line.substr(sizeof(kListening) - 1));
        }
        return addresses.size() == 3;
      },
      20s);
  ASSERT_EQ(addresses.size(), 3u) << read_file(out_) << read_file(err_);
  EXPECT_NE(addresses[0], addresses[1]);
  EXPECT_NE(addresses[1], addresses[2]);
  const TableConfig config = table_config("emb", 30, 4, UpdateMode::kSync, 1);
  for (int server = 0; server < 3; ++server) {
    ServerClient client(addresses[server]);
    ASSERT_TRUE(client.create(config, server, 3).ok()) << "server " << server;
    ASSERT_TRUE(client.push("emb", 0, 0, ids_tensor({server}), at::ones({1, 4})).ok());
    ASSERT_TRUE(client.step("emb", 0, 0).ok());
  }
  const pid_t pid = child_->pid();
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  const std::optional<int> stopped = child_->wait(20s);
  ASSERT_TRUE(stopped.has_value()) << "the servers did not stop after SIGTERM";
  EXPECT_TRUE(WIFEXITED(*stopped) && WEXITSTATUS(*stopped) == 0) << read_file(err_);
  for (int server = 0; server < 3; ++server) {
    EXPECT_EQ(
        read_checkpoint(checkpoints + "/" + generation_file_name("emb", server, 3, 1)).step, 1)
        << "server " << server;
  }

  child_ = std::make_unique<Child>(
      std::vector<std::string>{GRADWIRE_PS_SERVER_PATH, "--token-file", dir_.file("token"),
                               "--listen", addresses[0], "--listen", addresses[0]},
      dir_.file("out-twice"), dir_.file("err-twice"));
  const std::optional<int> status = child_->wait(20s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 2) << read_file(dir_.file("err-twice"));
  EXPECT_EQ(read_file(dir_.file("out-twice")), "");
  EXPECT_NE(read_file(dir_.file("err-twice")).find(addresses[0]), std::string::npos)
      << read_file(dir_.file("err-twice"));
}

TEST_F(ServerProcessTest, WrongTokenIsRejectedAndMissingTokenIsAUsageError) {
  const std::string address = start({"--token-file", dir_.file("token")}, 0);
  ASSERT_FALSE(address.empty()) << read_file(err_);
  ServerClient intruder(address, "not-the-token");
  EXPECT_EQ(intruder.create(table_config()).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  child_.reset();  // SIGKILL

  child_ = std::make_unique<Child>(
      std::vector<std::string>{GRADWIRE_PS_SERVER_PATH, "--listen", "127.0.0.1:0"},
      dir_.file("out"), dir_.file("err"));
  const std::optional<int> status = child_->wait(20s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 2);
  EXPECT_NE(read_file(dir_.file("err")).find("GRADWIRE_TOKEN"), std::string::npos)
      << read_file(dir_.file("err"));
  EXPECT_EQ(read_file(dir_.file("out")), "");
}

// Without TLS a server listening beyond loopback says once on stderr that the token and the
// tables cross the network in clear text; on loopback it says nothing of it.
TEST_F(ServerProcessTest, PlaintextBeyondLoopbackIsWarnedAboutOnce) {
  const auto warnings = [](const std::string& text) {
    size_t count = 0;
    for (size_t at = text.find("clear text"); at != std::string::npos;
         at = text.find("clear text", at + 1)) {
      ++count;
    }
    return count;
  };
  ASSERT_FALSE(start({"--token-file", dir_.file("token")}, 0).empty()) << read_file(err_);
  EXPECT_EQ(warnings(read_file(err_)), 0u) << read_file(err_);
  child_.reset();  // SIGKILL

  ASSERT_FALSE(start({"--token-file", dir_.file("token")}, 1, "0.0.0.0:0").empty())
      << read_file(err_);
  const std::string err = read_file(err_);
  EXPECT_EQ(warnings(err), 1u) << err;
  EXPECT_NE(err.find("--tls-cert"), std::string::npos) << err;
}

// The limit flags reach the server: a table above --max-trainers or one above --max-tables is
// refused naming the flag; a limit below 1 is a usage error.
TEST_F(ServerProcessTest, LimitFlagsBoundTheServer) {
  const std::string address =
      start({"--token-file", dir_.file("token"), "--max-trainers", "2", "--max-tables", "1"}, 0);
  ASSERT_FALSE(address.empty()) << read_file(err_);
  ServerClient client(address);
  const grpc::Status trainers = client.create(table_config("emb", 10, 4, UpdateMode::kSync, 3));
  EXPECT_EQ(trainers.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(trainers.error_message().find("--max-trainers"), std::string::npos);
  ASSERT_TRUE(client.create(table_config("emb", 10, 4, UpdateMode::kSync, 2)).ok());
  const grpc::Status tables = client.create(table_config("other"));
  EXPECT_EQ(tables.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(tables.error_message().find("--max-tables"), std::string::npos);
  child_.reset();  // SIGKILL

  child_ = std::make_unique<Child>(
      std::vector<std::string>{GRADWIRE_PS_SERVER_PATH, "--token-file", dir_.file("token"),
                               "--max-waiting-steps", "0"},
      dir_.file("out"), dir_.file("err"));
  const std::optional<int> status = child_->wait(20s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 2);
}

// ServerOptions resolves its token as ClientOptions does: the option, its file, the environment.
TEST(ServerToken, ComesFromTheOptionTheTokenFileOrTheEnvironment) {
  TempDir dir;
  std::ofstream(dir.file("token")) << "from-file\n";
  ::chmod(dir.file("token").c_str(), 0600);
  ServerOptions options = testing::test_server_options();
  options.token.reset();
  options.token_file = dir.file("token");
  const auto from_file = start_server(options, EnvMap{{"GRADWIRE_TOKEN", "from-env"}});
  EXPECT_TRUE(ServerClient(from_file->address(), "from-file").create(table_config()).ok());
  EXPECT_EQ(ServerClient(from_file->address(), "from-env").create(table_config()).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);

  options.token_file.clear();
  const auto from_env = start_server(options, EnvMap{{"GRADWIRE_JOB_TOKEN", "from-job"}});
  EXPECT_TRUE(ServerClient(from_env->address(), "from-job").create(table_config()).ok());

  try {
    start_server(options, EnvMap{});
    FAIL() << "a server without a token started";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("GRADWIRE_TOKEN"), std::string::npos) << error.what();
  }
}

TEST(ServerTls, AClientTrustingTheCertificateTalksToATlsServer) {
  TempDir dir;
  const auto certificate = rpc::testing::make_self_signed_certificate(dir.path());
  if (!certificate) GTEST_SKIP() << "openssl is not installed";
  ServerOptions options = testing::test_server_options();
  options.tls_cert_file = certificate->cert_file;
  options.tls_key_file = certificate->key_file;
  const auto server = start_server(options);

  rpc::ChannelOptions channel;
  channel.tls_root_cert_file = certificate->cert_file;
  ServerClient client(server->address(), testing::kToken, channel);
  ASSERT_TRUE(client.create(table_config()).ok());
  EXPECT_EQ(client.rows("emb", ids_tensor({1, 2})).size(0), 2);

  ServerClient plaintext(server->address());
  EXPECT_FALSE(plaintext.create(table_config()).ok());
}

}  // namespace
}  // namespace gradwire::ps
