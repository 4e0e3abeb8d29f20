#include <gtest/gtest.h>

#include "gradwire/comm/world.h"
#include "gradwire/common/error.h"
#include "gradwire/common/launcher_env.h"

namespace gradwire {
namespace {

std::string config_error(const InitOptions& options, const EnvMap& env) {
  try {
    resolve_world(options, env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ResolveWorld, Torchrun) {
  EnvMap env({{"RANK", "3"},
              {"WORLD_SIZE", "4"},
              {"LOCAL_RANK", "1"},
              {"LOCAL_WORLD_SIZE", "2"},
              {"MASTER_ADDR", "node0"},
              {"MASTER_PORT", "29500"}});
  auto w = resolve_world({}, env);
  EXPECT_EQ(w.flavour, EnvFlavour::kTorchrun);
  EXPECT_EQ(w.rank, 3);
  EXPECT_EQ(w.world_size, 4);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.local_world_size, 2);
  EXPECT_EQ(w.master_addr, "node0");
  EXPECT_EQ(w.master_port, 29500);
}

TEST(ResolveWorld, TorchrunAgentStoreIsUsedUnderTheAttemptsPrefix) {
  std::map<std::string, std::string> vars = {
      {"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"}};
  EXPECT_EQ(resolve_world({}, EnvMap(vars)).agent_store_prefix, "");  // rank 0 hosts the store
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  vars["TORCHELASTIC_RESTART_COUNT"] = "2";
  EXPECT_EQ(resolve_world({}, EnvMap(vars)).agent_store_prefix, "/worker/attempt_2");
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  EXPECT_EQ(resolve_world({}, EnvMap(vars)).agent_store_prefix, "");
}

TEST(ResolveWorld, OpenMpi) {
  EnvMap env({{"OMPI_COMM_WORLD_RANK", "5"},
              {"OMPI_COMM_WORLD_SIZE", "8"},
              {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
              {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
              {"MASTER_ADDR", "10.0.0.1"},
              {"MASTER_PORT", "1234"},
              // mpirun inside an allocation also sets Slurm's variables: Open MPI wins.
              {"SLURM_PROCID", "0"},
              {"SLURM_NTASKS", "1"}});
  auto w = resolve_world({}, env);
  EXPECT_EQ(w.flavour, EnvFlavour::kOpenMpi);
  EXPECT_EQ(w.rank, 5);
  EXPECT_EQ(w.world_size, 8);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.local_world_size, 4);
}

TEST(ResolveWorld, OpenMpiNeedsMasterAddress) {
  EnvMap env({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  auto what = config_error({}, env);
  EXPECT_NE(what.find("MASTER_ADDR, MASTER_PORT"), std::string::npos) << what;
  EXPECT_NE(what.find("Open MPI"), std::string::npos) << what;
  EXPECT_NE(what.find("mpirun -x"), std::string::npos) << what;
}

TEST(ResolveWorld, SlurmDerivesAddressAndPort) {
  EnvMap env({{"SLURM_PROCID", "5"},
              {"SLURM_NTASKS", "6"},
              {"SLURM_LOCALID", "1"},
              {"SLURM_TASKS_PER_NODE", "2(x3)"},
              {"SLURM_NODEID", "2"},
              {"SLURM_STEP_ID", "0"},
              {"SLURM_JOB_NODELIST", "gpu[07-09]"},
              {"SLURM_JOB_ID", "123456"}});
  auto w = resolve_world({}, env);
  EXPECT_EQ(w.flavour, EnvFlavour::kSlurm);
  EXPECT_EQ(w.rank, 5);
  EXPECT_EQ(w.world_size, 6);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.local_world_size, 2);
  EXPECT_EQ(w.master_addr, "gpu07");
  EXPECT_EQ(w.master_port, 20000 + 123456 % 20000);
}

TEST(ResolveWorld, SlurmHonoursMasterVariables) {
  EnvMap env({{"SLURM_PROCID", "0"},
              {"SLURM_STEP_ID", "3"},
              {"SLURM_NTASKS", "2"},
              {"SLURM_NTASKS_PER_NODE", "2"},
              {"MASTER_ADDR", "head"},
              {"MASTER_PORT", "4000"}});
  auto w = resolve_world({}, env);
  EXPECT_EQ(w.master_addr, "head");
  EXPECT_EQ(w.master_port, 4000);
  EXPECT_EQ(w.local_world_size, 2);
}

TEST(ResolveWorld, MissingVariablesAreAllNamed) {
  auto what = config_error({}, EnvMap({{"RANK", "0"}}));
  // RANK is set, so only the others are missing.
  EXPECT_NE(what.find("missing environment variable(s): WORLD_SIZE, MASTER_ADDR, MASTER_PORT ("),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("gradwire-run"), std::string::npos) << what;

  auto size_only = config_error({}, EnvMap({{"WORLD_SIZE", "2"}}));
  EXPECT_NE(size_only.find("variable(s): RANK, MASTER_ADDR, MASTER_PORT ("), std::string::npos)
      << size_only;
}

TEST(ResolveWorld, MasterAddressMissingWhereNeeded) {
  auto what =
      config_error({}, EnvMap({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "29500"}}));
  EXPECT_NE(what.find("missing environment variable(s): MASTER_ADDR ("), std::string::npos) << what;
  EXPECT_NE(what.find("torchrun/gradwire-run"), std::string::npos) << what;
  // An srun step without a node list or MASTER_ADDR cannot know where rank 0 is.
  auto slurm = config_error({}, EnvMap({{"SLURM_PROCID", "1"},
                                        {"SLURM_STEP_ID", "0"},
                                        {"SLURM_NTASKS", "2"},
                                        {"SLURM_JOB_ID", "7"}}));
  EXPECT_NE(slurm.find("missing environment variable(s): SLURM_JOB_NODELIST ("), std::string::npos)
      << slurm;
}

TEST(ResolveWorld, NoLauncherIsAWorldOfOne) {
  auto w = resolve_world({}, EnvMap());
  EXPECT_EQ(w.flavour, EnvFlavour::kNone);
  EXPECT_EQ(w.rank, 0);
  EXPECT_EQ(w.world_size, 1);
  EXPECT_EQ(w.local_rank, 0);
  EXPECT_EQ(w.local_world_size, 1);
  EXPECT_EQ(w.master_addr, "127.0.0.1");
  EXPECT_EQ(w.master_port, 0);
  // Rendezvous settings alone do not make a job.
  auto v = resolve_world({}, EnvMap({{"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"}}));
  EXPECT_EQ(v.flavour, EnvFlavour::kNone);
  EXPECT_EQ(v.world_size, 1);
}

TEST(ResolveWorld, SallocShellIsAWorldOfOne) {
  // salloc -N 2 -n 4: the allocation's variables, no srun step.
  EnvMap salloc({{"SLURM_JOB_ID", "4242"},
                 {"SLURM_JOBID", "4242"},
                 {"SLURM_NTASKS", "4"},
                 {"SLURM_NPROCS", "4"},
                 {"SLURM_NNODES", "2"},
                 {"SLURM_NODELIST", "node[1-2]"},
                 {"SLURM_JOB_NODELIST", "node[1-2]"},
                 {"SLURM_TASKS_PER_NODE", "2(x2)"}});
  auto w = resolve_world({}, salloc);
  EXPECT_EQ(w.flavour, EnvFlavour::kNone);
  EXPECT_EQ(w.world_size, 1);
  EXPECT_EQ(w.rank, 0);
  EXPECT_EQ(w.master_port, 0);
  // An sbatch script also has SLURM_PROCID=0, SLURM_LOCALID and SLURM_NODEID: still no step.
  auto values = salloc.values();
  values["SLURM_PROCID"] = "0";
  values["SLURM_LOCALID"] = "0";
  values["SLURM_NODEID"] = "0";
  auto batch = resolve_world({}, EnvMap(values));
  EXPECT_EQ(batch.flavour, EnvFlavour::kNone);
  EXPECT_EQ(batch.world_size, 1);
}

TEST(ResolveWorld, SlurmStepTaskCountWins) {
  // An interactive srun step inside `salloc -n 4` runs 1 task.
  auto w = resolve_world({}, EnvMap({{"SLURM_PROCID", "0"},
                                     {"SLURM_STEP_ID", "0"},
                                     {"SLURM_NTASKS", "4"},
                                     {"SLURM_STEP_NUM_TASKS", "1"},
                                     {"SLURM_JOB_NODELIST", "node1"},
                                     {"SLURM_JOB_ID", "4242"}}));
  EXPECT_EQ(w.flavour, EnvFlavour::kSlurm);
  EXPECT_EQ(w.world_size, 1);
}

TEST(ResolveWorld, IdentityOptionsWithoutLauncherMustBeComplete) {
  InitOptions options;
  options.rank = 1;
  auto what = config_error(options, EnvMap());
  EXPECT_NE(what.find("missing environment variable(s): WORLD_SIZE, MASTER_ADDR, MASTER_PORT ("),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("explicit options"), std::string::npos) << what;
}

TEST(ResolveWorld, InconsistentValuesAreNamed) {
  auto what = config_error(
      {},
      EnvMap({{"RANK", "4"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "70000"}}));
  EXPECT_NE(what.find("rank 4 is not in [0, world size 2)"), std::string::npos) << what;
  EXPECT_NE(what.find("master port 70000"), std::string::npos) << what;
  EXPECT_NE(config_error({}, EnvMap({{"RANK", "x"}, {"WORLD_SIZE", "2"}})).find("RANK='x'"),
            std::string::npos);
}

TEST(ResolveWorld, ExplicitOptionsOverrideEnvironment) {
  InitOptions options;
  options.rank = 1;
  options.world_size = 2;
  options.master_addr = "127.0.0.1";
  options.master_port = 5555;
  auto w = resolve_world(options, EnvMap());
  EXPECT_EQ(w.flavour, EnvFlavour::kExplicit);
  EXPECT_EQ(w.rank, 1);
  EXPECT_EQ(w.local_world_size, 1);
  // Only the port from options; the rest from the environment.
  InitOptions port_only;
  port_only.master_port = 7000;
  auto v =
      resolve_world(port_only, EnvMap({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "h"}}));
  EXPECT_EQ(v.master_port, 7000);
  EXPECT_EQ(v.flavour, EnvFlavour::kTorchrun);
}

TEST(ResolveIntraOpThreads, OptionThenOmpThenCoresPerLocalRank) {
  WorldInfo world;
  world.local_world_size = 4;
  EXPECT_EQ(resolve_threads({}, EnvMap(), world, 16), 4);
  EXPECT_EQ(resolve_threads({}, EnvMap(), world, 2), 1);
  EXPECT_EQ(resolve_threads({}, EnvMap({{"OMP_NUM_THREADS", "3"}}), world, 16), 3);
  InitOptions options;
  options.threads = 5;
  EXPECT_EQ(resolve_threads(options, EnvMap({{"OMP_NUM_THREADS", "3"}}), world, 16), 5);
}

TEST(ResolveInitOptions, TimeoutOptionThenEnvironmentThenDefault) {
  const auto timeout = [](const InitOptions& options, const EnvMap& env) {
    return *resolve(options, env).timeout;
  };
  InitOptions options;
  EXPECT_EQ(timeout(options, EnvMap()), std::chrono::seconds(300));
  EXPECT_EQ(timeout(options, EnvMap({{"GRADWIRE_TIMEOUT", "750ms"}})),
            std::chrono::milliseconds(750));
  options.timeout = std::chrono::seconds(2);
  EXPECT_EQ(timeout(options, EnvMap({{"GRADWIRE_TIMEOUT", "750ms"}})), std::chrono::seconds(2));
  EXPECT_THROW(resolve({}, EnvMap({{"GRADWIRE_TIMEOUT", "forever"}})), ConfigError);
}

TEST(ResolveInitOptions, TheRendezvousHasItsOwnTimeoutNeverShorterThanFiveMinutesByDefault) {
  const auto rendezvous = [](const InitOptions& options, const EnvMap& env) {
    return *resolve(options, env).rendezvous_timeout;
  };
  InitOptions options;
  EXPECT_EQ(rendezvous(options, EnvMap()), std::chrono::seconds(300));
  // A short collective timeout leaves the rendezvous at 300 s; a longer one takes it along.
  EXPECT_EQ(rendezvous(options, EnvMap({{"GRADWIRE_TIMEOUT", "2s"}})), std::chrono::seconds(300));
  EXPECT_EQ(rendezvous(options, EnvMap({{"GRADWIRE_TIMEOUT", "10m"}})), std::chrono::minutes(10));
  EXPECT_EQ(rendezvous(options, EnvMap({{"GRADWIRE_TIMEOUT", "2s"},
                                        {"GRADWIRE_RENDEZVOUS_TIMEOUT", "3s"}})),
            std::chrono::seconds(3));
  options.rendezvous_timeout = std::chrono::milliseconds(1500);
  EXPECT_EQ(rendezvous(options, EnvMap({{"GRADWIRE_RENDEZVOUS_TIMEOUT", "3s"}})),
            std::chrono::milliseconds(1500));
  EXPECT_THROW(resolve({}, EnvMap({{"GRADWIRE_RENDEZVOUS_TIMEOUT", "soon"}})), ConfigError);
}

TEST(ResolveInitOptions, BackendOptionThenEnvironmentThenAuto) {
  const auto backend = [](const InitOptions& options, const EnvMap& env) {
    return *resolve(options, env).backend;
  };
  InitOptions options;
  EXPECT_EQ(backend(options, EnvMap()), "auto");
  EXPECT_EQ(backend(options, EnvMap({{"GRADWIRE_BACKEND", "shm"}})), "shm");
  EXPECT_EQ(backend(options, EnvMap({{"GRADWIRE_BACKEND", ""}})), "auto");
  options.backend = "auto";
  EXPECT_EQ(backend(options, EnvMap({{"GRADWIRE_BACKEND", "shm"}})), "auto");
  options.backend = "gloo";
  EXPECT_EQ(backend(options, EnvMap({{"GRADWIRE_BACKEND", "shm"}})), "gloo");
  // Fields without a variable stay as given.
  options.threads = 3;
  options.bind_address = "10.0.0.1";
  EXPECT_EQ(resolve(options, EnvMap({{"OMP_NUM_THREADS", "7"}})).threads, 3);
  EXPECT_EQ(resolve(options, EnvMap()).bind_address, "10.0.0.1");
  EXPECT_FALSE(resolve(InitOptions{}, EnvMap({{"RANK", "1"}})).rank);
}

}  // namespace
}  // namespace gradwire
