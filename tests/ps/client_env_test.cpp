// The client's defaults from an injected environment: the trainer's rank and count come from the
// one launcher detector (gradwire/common/launcher_env.h), so mpirun and srun trainers are not all
// rank 0 of 1; the TLS roots from GRADWIRE_TLS_ROOTS. Connecting is lazy, so no server needs to
// run, except for the one TLS server a client configured by GRADWIRE_TLS_ROOTS alone talks to.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "../rpc/test_certificates.h"
#include "gradwire/common/error.h"
#include "gradwire/ps/client.h"
#include "gradwire/ps/server.h"

namespace gradwire::ps {
namespace {

// Options naming a server and a token, so only the trainer identity comes from the environment.
ClientOptions server_and_token() {
  ClientOptions options;
  options.servers = {"127.0.0.1:1"};
  options.token = "client-env-test-token";
  return options;
}

TEST(PsClientEnv, OpenMpiTrainersTakeTheirRankAndCountFromOmpiCommWorld) {
  const EnvMap mpirun({{"OMPI_COMM_WORLD_RANK", "2"},
                       {"OMPI_COMM_WORLD_SIZE", "3"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                       // mpirun inside an allocation inherits these; Open MPI's variables win.
                       {"SLURM_PROCID", "0"},
                       {"SLURM_STEP_ID", "0"},
                       {"SLURM_NTASKS", "1"}});
  const auto client = connect(server_and_token(), mpirun);
  EXPECT_EQ(client->rank(), 2);
  EXPECT_EQ(client->world_size(), 3);
}

TEST(PsClientEnv, TorchrunSrunAndNoLauncher) {
  const auto torchrun = connect(server_and_token(), EnvMap({{"RANK", "1"}, {"WORLD_SIZE", "4"}}));
  EXPECT_EQ(torchrun->rank(), 1);
  EXPECT_EQ(torchrun->world_size(), 4);
  const auto srun = connect(server_and_token(), EnvMap({{"SLURM_PROCID", "3"},
                                                        {"SLURM_STEP_ID", "0"},
                                                        {"SLURM_NTASKS", "8"},
                                                        {"SLURM_STEP_NUM_TASKS", "5"}}));
  EXPECT_EQ(srun->rank(), 3);
  EXPECT_EQ(srun->world_size(), 5);
  // An salloc shell is no step: the trainer is alone.
  const auto salloc =
      connect(server_and_token(), EnvMap({{"SLURM_JOB_ID", "9"}, {"SLURM_NTASKS", "4"}}));
  EXPECT_EQ(salloc->rank(), 0);
  EXPECT_EQ(salloc->world_size(), 1);
}

TEST(PsClientEnv, ServersAndTokenAlsoComeFromTheGivenEnvironment) {
  const auto client = connect({}, EnvMap({{"GRADWIRE_PS_ADDRS", "127.0.0.1:1,127.0.0.1:2"},
                                          {"GRADWIRE_TOKEN", "t"},
                                          {"OMPI_COMM_WORLD_RANK", "1"},
                                          {"OMPI_COMM_WORLD_SIZE", "2"}}));
  EXPECT_EQ(client->num_servers(), 2);
  EXPECT_EQ(client->rank(), 1);
  EXPECT_EQ(client->world_size(), 2);
}

TEST(PsClientEnv, ExplicitOptionsWinOverTheLauncher) {
  ClientOptions options = server_and_token();
  options.rank = 1;
  options.world_size = 2;
  // Both given: the launcher's variables are not read, malformed or not.
  const auto client = connect(options, EnvMap({{"RANK", "x"}, {"WORLD_SIZE", "9"}}));
  EXPECT_EQ(client->rank(), 1);
  EXPECT_EQ(client->world_size(), 2);
  // One given: the other from the launcher.
  ClientOptions rank_only = server_and_token();
  rank_only.rank = 0;
  const auto mixed =
      connect(rank_only, EnvMap({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}}));
  EXPECT_EQ(mixed->rank(), 0);
  EXPECT_EQ(mixed->world_size(), 4);
}

TEST(PsClientEnv, PartialOrMalformedLauncherVariablesAreConfigErrorsNamingThem) {
  try {
    connect(server_and_token(), EnvMap({{"OMPI_COMM_WORLD_RANK", "1"}}));
    FAIL() << "a rank without a world size must not make a trainer 1 of 1";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("OMPI_COMM_WORLD_SIZE"), std::string::npos) << e.what();
  }
  try {
    connect(server_and_token(), EnvMap({{"RANK", "one"}, {"WORLD_SIZE", "2"}}));
    FAIL() << "a malformed RANK must be refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("RANK='one'"), std::string::npos) << e.what();
  }
}

// resolve() is the one pure step from options and environment to what connect() uses.
TEST(PsClientEnv, ResolveFillsEveryUnsetFieldFromTheEnvironmentAndKeepsTheSetOnes) {
  const EnvMap env({{"GRADWIRE_PS_ADDRS", "10.0.0.1:5000,10.0.0.2:5000"},
                    {"GRADWIRE_TOKEN", "env-token"},
                    {"RANK", "1"},
                    {"WORLD_SIZE", "2"},
                    {"MASTER_ADDR", "127.0.0.1"},
                    {"MASTER_PORT", "29500"},
                    {"GRADWIRE_TIMEOUT", "45s"}});
  const ClientOptions from_env = resolve(ClientOptions{}, env);
  EXPECT_EQ(from_env.servers, (std::vector<std::string>{"10.0.0.1:5000", "10.0.0.2:5000"}));
  EXPECT_EQ(from_env.token, "env-token");
  EXPECT_EQ(from_env.rank, 1);
  EXPECT_EQ(from_env.world_size, 2);
  EXPECT_EQ(from_env.step_timeout, std::chrono::milliseconds(45000));

  ClientOptions set = server_and_token();
  set.rank = 0;
  set.world_size = 3;
  set.step_timeout = std::chrono::milliseconds(10);
  const ClientOptions kept = resolve(set, env);
  EXPECT_EQ(kept.servers, std::vector<std::string>{"127.0.0.1:1"});
  EXPECT_EQ(kept.token, "client-env-test-token");
  EXPECT_EQ(kept.rank, 0);
  EXPECT_EQ(kept.world_size, 3);
  EXPECT_EQ(kept.step_timeout, std::chrono::milliseconds(10));
  EXPECT_EQ(resolve(server_and_token(), EnvMap{}).step_timeout, std::chrono::milliseconds(300000));
}

// The client knows it is an elastic trainer when gradwire-run --elastic named it.
TEST(PsClientEnv, ElasticComesFromGradwireElasticIdUnlessSet) {
  EXPECT_FALSE(*resolve(server_and_token(), EnvMap{}).elastic);
  EXPECT_TRUE(*resolve(server_and_token(), EnvMap({{"GRADWIRE_ELASTIC_ID", "0.1.0"}})).elastic);
  ClientOptions set = server_and_token();
  set.elastic = false;
  EXPECT_FALSE(*resolve(set, EnvMap({{"GRADWIRE_ELASTIC_ID", "0.1.0"}})).elastic);
}

// The server's options resolve by the same rule, without starting a server.
TEST(PsClientEnv, ServerOptionsResolveTheTokenAndHostFromTheEnvironment) {
  ServerOptions options;
  const ServerOptions from_env =
      resolve(options, EnvMap({{"GRADWIRE_JOB_TOKEN", "job"}, {"GRADWIRE_HOST_ID", "host-a"}}));
  EXPECT_EQ(from_env.token, "job");
  EXPECT_EQ(from_env.host_identity, "host-a");
  EXPECT_EQ(resolve(options, EnvMap({{"GRADWIRE_TOKEN", "t"}, {"GRADWIRE_JOB_TOKEN", "job"}})).token,
            "t");
  options.token = "mine";
  options.host_identity = "host-b";
  const ServerOptions kept = resolve(options, EnvMap({{"GRADWIRE_TOKEN", "t"}}));
  EXPECT_EQ(kept.token, "mine");
  EXPECT_EQ(kept.host_identity, "host-b");
  EXPECT_THROW(resolve(ServerOptions{}, EnvMap{}), ConfigError);
  ServerOptions bad;
  bad.token = "x";
  bad.max_trainers = 0;
  EXPECT_THROW(resolve(bad, EnvMap{}), ConfigError);
}

TEST(PsClientEnv, TlsRootsComeFromGradwireTlsRootsUnlessSet) {
  const EnvMap env({{"GRADWIRE_TLS_ROOTS", "/etc/gradwire/roots.pem"}});
  EXPECT_EQ(resolve(server_and_token(), env).tls_root_cert_file, "/etc/gradwire/roots.pem");
  ClientOptions set = server_and_token();
  set.tls_root_cert_file = "/home/me/roots.pem";
  EXPECT_EQ(resolve(set, env).tls_root_cert_file, "/home/me/roots.pem");
  EXPECT_EQ(resolve(server_and_token(), EnvMap{}).tls_root_cert_file, "");
  EXPECT_EQ(resolve(server_and_token(), EnvMap({{"GRADWIRE_TLS_ROOTS", ""}})).tls_root_cert_file,
            "");
}

// End to end: a TLS server, and a client that knows its roots only from GRADWIRE_TLS_ROOTS.
TEST(PsClientEnv, AClientTrustingGradwireTlsRootsLooksUpRowsOfATlsServer) {
  std::string dir = (std::filesystem::temp_directory_path() / "gwps-tls-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  struct RemoveDir {
    std::string path;
    ~RemoveDir() { std::filesystem::remove_all(path); }
  } remove_dir{dir};
  const auto certificate = rpc::testing::make_self_signed_certificate(dir);
  if (!certificate) GTEST_SKIP() << "openssl is not installed";
  ServerOptions server_options;
  server_options.token = "tls-test-token";
  server_options.tls_cert_file = certificate->cert_file;
  server_options.tls_key_file = certificate->key_file;
  const auto server = start_server(server_options, EnvMap{});

  ClientOptions options;
  options.servers = {server->address()};
  options.token = "tls-test-token";
  options.call_deadline = std::chrono::milliseconds(5000);
  options.max_retries = 0;
  TableConfig config;
  config.name = "emb";
  config.num_rows = 4;
  config.dim = 3;
  const auto client = connect(options, EnvMap({{"GRADWIRE_TLS_ROOTS", certificate->cert_file}}));
  client->create_table(config);
  const at::Tensor rows = client->lookup("emb", at::arange(4, at::kLong));
  EXPECT_EQ(rows.sizes(), (std::vector<int64_t>{4, 3}));

  // Without the roots the same client speaks plaintext, which the TLS server does not answer.
  EXPECT_THROW(connect(options, EnvMap{})->create_table(config), Error);
}

}  // namespace
}  // namespace gradwire::ps
