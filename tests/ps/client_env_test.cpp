// The client's defaults from an injected environment: the trainer's rank and count come from the
// one launcher detector (gradwire/common/launcher_env.h), so mpirun and srun trainers are not all
// rank 0 of 1. Connecting is lazy, so no server needs to run.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "gradwire/common/error.h"
#include "gradwire/ps/client.h"

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

}  // namespace
}  // namespace gradwire::ps
