// The one launcher detector and the rank and world size it reads (launcher_env.h).
#include "gradwire/common/launcher_env.h"

#include <limits>
#include <vector>

#include "common/enum_names.h"
#include "gradwire/common/error.h"

namespace gradwire {

namespace {
constexpr EnumNames<EnvFlavour, 5> kFlavourNames{{{{EnvFlavour::kNone, "no launcher"},
                                                   {EnvFlavour::kExplicit, "explicit options"},
                                                   {EnvFlavour::kTorchrun, "torchrun/gradwire-run"},
                                                   {EnvFlavour::kOpenMpi, "Open MPI"},
                                                   {EnvFlavour::kSlurm, "Slurm"}}}};
}  // namespace

const char* to_string(EnvFlavour flavour) { return kFlavourNames.name(flavour); }

EnvFlavour detect_env_flavour(const EnvMap& env) {
  if (env.has("RANK") || env.has("WORLD_SIZE")) return EnvFlavour::kTorchrun;
  if (env.has("OMPI_COMM_WORLD_RANK") || env.has("OMPI_COMM_WORLD_SIZE")) {
    return EnvFlavour::kOpenMpi;
  }
  // SLURM_STEP_ID marks a task of an srun step; an salloc/sbatch shell has only the allocation.
  if (env.has("SLURM_PROCID") && env.has("SLURM_STEP_ID")) return EnvFlavour::kSlurm;
  return EnvFlavour::kNone;
}

LauncherRankVariables read_launcher_rank_variables(const EnvMap& env) {
  LauncherRankVariables read;
  read.flavour = detect_env_flavour(env);
  switch (read.flavour) {
    case EnvFlavour::kNone:
    case EnvFlavour::kExplicit:  // not returned by detect_env_flavour
    case EnvFlavour::kTorchrun:
      read.rank_name = "RANK";
      read.world_size_name = "WORLD_SIZE";
      break;
    case EnvFlavour::kOpenMpi:
      read.rank_name = "OMPI_COMM_WORLD_RANK";
      read.world_size_name = "OMPI_COMM_WORLD_SIZE";
      break;
    case EnvFlavour::kSlurm:
      read.rank_name = "SLURM_PROCID";
      // The step's task count: an interactive step inside an allocation has 1 task while
      // SLURM_NTASKS still counts the allocation's.
      read.world_size_name =
          env.has("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
      break;
  }
  read.rank = env.get_int(read.rank_name);
  read.world_size = env.get_int(read.world_size_name);
  return read;
}

LauncherRank launcher_rank(const EnvMap& env) {
  const LauncherRankVariables read = read_launcher_rank_variables(env);
  LauncherRank out;
  out.flavour = read.flavour;
  if (read.flavour == EnvFlavour::kNone) return out;
  const std::string source = std::string("the ") + to_string(read.flavour) +
                             " environment, which states them in " + read.rank_name + ", " +
                             read.world_size_name;
  std::vector<std::string> missing;
  if (!read.rank) missing.push_back(read.rank_name);
  if (!read.world_size) missing.push_back(read.world_size_name);
  if (!missing.empty()) {
    throw ConfigError(
        "gradwire: cannot tell this process's rank and world size; missing environment "
        "variable(s): " +
        missing.front() + (missing.size() > 1 ? ", " + missing.back() : std::string()) +
        " (reading " + source +
        "). Start the program with gradwire-run, torchrun --no-python, srun or mpirun, or set "
        "both variables yourself.");
  }
  if (*read.world_size < 1 || *read.world_size > std::numeric_limits<int>::max() ||
      *read.rank < 0 || *read.rank >= *read.world_size) {
    throw ConfigError("gradwire: inconsistent " + std::string(to_string(read.flavour)) +
                      " settings: " + read.rank_name + "=" + std::to_string(*read.rank) +
                      " is not a rank of " + read.world_size_name + "=" +
                      std::to_string(*read.world_size) + " (ranks are 0 .. " +
                      read.world_size_name + " - 1, and " + read.world_size_name +
                      " at least 1). Check how the launcher was started.");
  }
  out.rank = static_cast<int>(*read.rank);
  out.world_size = static_cast<int>(*read.world_size);
  return out;
}

}  // namespace gradwire
