// The one launcher detector: which launcher's environment this is, and the rank and world size
// it states (torchrun/gradwire-run, Open MPI, an srun step; an salloc shell or nothing: alone).
#include "gradwire/common/launcher_env.h"

#include <gtest/gtest.h>

#include "gradwire/common/error.h"

namespace gradwire {
namespace {

// The ConfigError launcher_rank(env) throws, or "" when it throws none.
std::string config_error(const EnvMap& env) {
  try {
    launcher_rank(env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(DetectEnvFlavour, Torchrun) {
  EXPECT_EQ(detect_env_flavour(EnvMap({{"RANK", "1"}, {"WORLD_SIZE", "2"}})),
            EnvFlavour::kTorchrun);
  // Partial: still torchrun's, so resolve_world names what is missing.
  EXPECT_EQ(detect_env_flavour(EnvMap({{"RANK", "0"}})), EnvFlavour::kTorchrun);
  EXPECT_EQ(detect_env_flavour(EnvMap({{"WORLD_SIZE", "2"}})), EnvFlavour::kTorchrun);
  // gradwire-run or torchrun inside an srun step: its own variables win.
  EXPECT_EQ(
      detect_env_flavour(EnvMap(
          {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}})),
      EnvFlavour::kTorchrun);
}

TEST(DetectEnvFlavour, OpenMpi) {
  EXPECT_EQ(
      detect_env_flavour(EnvMap({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}})),
      EnvFlavour::kOpenMpi);
  EXPECT_EQ(detect_env_flavour(EnvMap({{"OMPI_COMM_WORLD_SIZE", "4"}})), EnvFlavour::kOpenMpi);
  // mpirun inside an allocation (or an srun step) inherits SLURM_*: Open MPI wins.
  EXPECT_EQ(detect_env_flavour(EnvMap({{"OMPI_COMM_WORLD_RANK", "3"},
                                       {"OMPI_COMM_WORLD_SIZE", "4"},
                                       {"SLURM_PROCID", "0"},
                                       {"SLURM_STEP_ID", "0"},
                                       {"SLURM_NTASKS", "1"}})),
            EnvFlavour::kOpenMpi);
}

TEST(DetectEnvFlavour, SrunStepButNotSallocOrSbatch) {
  EXPECT_EQ(detect_env_flavour(EnvMap({{"SLURM_PROCID", "1"},
                                       {"SLURM_STEP_ID", "0"},
                                       {"SLURM_NTASKS", "2"},
                                       {"SLURM_JOB_ID", "9"}})),
            EnvFlavour::kSlurm);
  // salloc shell: the allocation, no task.
  EXPECT_EQ(detect_env_flavour(EnvMap(
                {{"SLURM_JOB_ID", "9"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "node[1-2]"}})),
            EnvFlavour::kNone);
  // sbatch script: SLURM_PROCID=0 of the batch step, but no srun step.
  EXPECT_EQ(detect_env_flavour(EnvMap({{"SLURM_JOB_ID", "9"},
                                       {"SLURM_NTASKS", "2"},
                                       {"SLURM_PROCID", "0"},
                                       {"SLURM_NODELIST", "node[1-2]"}})),
            EnvFlavour::kNone);
  EXPECT_FALSE(in_launcher_environment(EnvMap({{"SLURM_JOB_ID", "9"}, {"SLURM_NTASKS", "2"}})));
  EXPECT_TRUE(in_launcher_environment(EnvMap({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}})));
}

TEST(DetectEnvFlavour, NothingIsNone) {
  EXPECT_EQ(detect_env_flavour(EnvMap()), EnvFlavour::kNone);
  EXPECT_EQ(detect_env_flavour(EnvMap({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}})),
            EnvFlavour::kNone);
  EXPECT_FALSE(in_launcher_environment(EnvMap()));
  EXPECT_STREQ(to_string(EnvFlavour::kNone), "no launcher");
}

TEST(LauncherRank, Torchrun) {
  const LauncherRank r = launcher_rank(EnvMap({{"RANK", "3"}, {"WORLD_SIZE", "4"}}));
  EXPECT_EQ(r.flavour, EnvFlavour::kTorchrun);
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.world_size, 4);
}

TEST(LauncherRank, OpenMpiEvenInsideAnAllocation) {
  const LauncherRank r = launcher_rank(EnvMap({{"OMPI_COMM_WORLD_RANK", "5"},
                                               {"OMPI_COMM_WORLD_SIZE", "8"},
                                               {"SLURM_PROCID", "0"},
                                               {"SLURM_STEP_ID", "0"},
                                               {"SLURM_NTASKS", "1"}}));
  EXPECT_EQ(r.flavour, EnvFlavour::kOpenMpi);
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.world_size, 8);
}

TEST(LauncherRank, SrunStepCountsTheStepsTasks) {
  const LauncherRank r = launcher_rank(EnvMap({{"SLURM_PROCID", "1"},
                                               {"SLURM_STEP_ID", "0"},
                                               {"SLURM_NTASKS", "2"},
                                               {"SLURM_JOB_ID", "9"}}));
  EXPECT_EQ(r.flavour, EnvFlavour::kSlurm);
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.world_size, 2);
  // An interactive step of 1 task inside `salloc -n 4`.
  const LauncherRank step = launcher_rank(EnvMap({{"SLURM_PROCID", "0"},
                                                  {"SLURM_STEP_ID", "0"},
                                                  {"SLURM_NTASKS", "4"},
                                                  {"SLURM_STEP_NUM_TASKS", "1"}}));
  EXPECT_EQ(step.world_size, 1);
  const LauncherRankVariables read = read_launcher_rank_variables(
      EnvMap({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "1"}}));
  EXPECT_EQ(read.rank_name, "SLURM_PROCID");
  EXPECT_EQ(read.world_size_name, "SLURM_STEP_NUM_TASKS");
}

TEST(LauncherRank, SallocOrSbatchShellIsAlone) {
  const LauncherRank r = launcher_rank(EnvMap({{"SLURM_JOB_ID", "4242"},
                                               {"SLURM_NTASKS", "4"},
                                               {"SLURM_PROCID", "0"},
                                               {"SLURM_NODELIST", "node[1-2]"},
                                               {"SLURM_TASKS_PER_NODE", "2(x2)"}}));
  EXPECT_EQ(r.flavour, EnvFlavour::kNone);
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.world_size, 1);
}

TEST(LauncherRank, NoLauncherIsRankZeroOfOne) {
  const LauncherRank r = launcher_rank(EnvMap({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}));
  EXPECT_EQ(r.flavour, EnvFlavour::kNone);
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.world_size, 1);
  const LauncherRankVariables read = read_launcher_rank_variables(EnvMap());
  EXPECT_EQ(read.flavour, EnvFlavour::kNone);
  EXPECT_EQ(read.rank_name, "RANK");
  EXPECT_FALSE(read.rank.has_value());
  EXPECT_FALSE(read.world_size.has_value());
}

TEST(LauncherRank, PartialEnvironmentNamesTheMissingVariable) {
  const std::string torchrun = config_error(EnvMap({{"RANK", "0"}}));
  EXPECT_TRUE(contains(torchrun, "missing environment variable(s): WORLD_SIZE (")) << torchrun;
  EXPECT_TRUE(contains(torchrun, "torchrun/gradwire-run")) << torchrun;
  const std::string mpi = config_error(EnvMap({{"OMPI_COMM_WORLD_SIZE", "4"}}));
  EXPECT_TRUE(contains(mpi, "missing environment variable(s): OMPI_COMM_WORLD_RANK (")) << mpi;
  EXPECT_TRUE(contains(mpi, "Open MPI")) << mpi;
  const std::string slurm = config_error(EnvMap({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}}));
  EXPECT_TRUE(contains(slurm, "missing environment variable(s): SLURM_NTASKS (")) << slurm;
  // The lenient read leaves the missing value unset instead.
  const LauncherRankVariables read = read_launcher_rank_variables(EnvMap({{"RANK", "0"}}));
  EXPECT_EQ(read.rank, 0);
  EXPECT_FALSE(read.world_size.has_value());
}

TEST(LauncherRank, GarbageAndInconsistentValuesNameTheVariable) {
  const std::string garbage = config_error(EnvMap({{"RANK", "x"}, {"WORLD_SIZE", "2"}}));
  EXPECT_TRUE(contains(garbage, "RANK='x'")) << garbage;
  EXPECT_THROW(read_launcher_rank_variables(EnvMap({{"OMPI_COMM_WORLD_SIZE", "four"}})),
               ConfigError);
  const std::string outside =
      config_error(EnvMap({{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}}));
  EXPECT_TRUE(contains(outside, "OMPI_COMM_WORLD_RANK=4 is not a rank of OMPI_COMM_WORLD_SIZE=4"))
      << outside;
  EXPECT_TRUE(contains(config_error(EnvMap({{"RANK", "0"}, {"WORLD_SIZE", "0"}})), "WORLD_SIZE=0"));
}

}  // namespace
}  // namespace gradwire
