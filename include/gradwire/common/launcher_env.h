// Which launcher started this process, and the rank and world size it states, judged from the
// environment alone. This is the one launcher detector every part of gradwire uses (comm's init
// and resolve_world, the parameter-server client, gradwire-bench); nothing else reads launcher
// variables to decide whether, and which, rank of a job a process is.
//
// Rules, first match wins:
//   kTorchrun  RANK or WORLD_SIZE is set (torchrun, gradwire-run, or variables set by hand).
//   kOpenMpi   OMPI_COMM_WORLD_RANK or OMPI_COMM_WORLD_SIZE is set (mpirun). Checked before
//              Slurm: mpirun inside an allocation inherits the allocation's SLURM_* variables.
//   kSlurm     SLURM_PROCID and SLURM_STEP_ID are set: a task of an `srun` step. An `salloc` or
//              `sbatch` shell has the allocation's SLURM_JOB_ID, SLURM_NTASKS, SLURM_NODELIST
//              (sbatch even SLURM_PROCID=0) but no step, so a program started there plainly is
//              not one of SLURM_NTASKS ranks: kNone.
//   kNone      none of these: the process is alone (rank 0 of 1).
// A flavour only says where to look; a partial set of its variables (RANK without WORLD_SIZE) is
// a ConfigError naming them, never a world of one.
//
// Where each flavour states the rank and the world size:
//   kTorchrun  RANK, WORLD_SIZE
//   kOpenMpi   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE
//   kSlurm     SLURM_PROCID, SLURM_STEP_NUM_TASKS (the step's tasks; an interactive step inside
//              `salloc -n 4` runs 1) else SLURM_NTASKS
//
// Pure and thread-safe: every function reads only the EnvMap it is given. Nothing blocks.
#pragma once

#include <optional>
#include <string>

#include "gradwire/common/env.h"

namespace gradwire {

enum class EnvFlavour {
  kNone,      // no launcher: a world of one
  kExplicit,  // the caller supplied the identity (InitOptions, ClientOptions); never detected
  kTorchrun,
  kOpenMpi,
  kSlurm,
};

// "torchrun/gradwire-run", "Open MPI", "Slurm", "explicit options", "no launcher".
const char* to_string(EnvFlavour flavour);

// The launcher environment `env` belongs to (see the rules above); never kExplicit.
EnvFlavour detect_env_flavour(const EnvMap& env);

// Whether `env` makes this process a rank of a job started by a launcher.
inline bool in_launcher_environment(const EnvMap& env) {
  return detect_env_flavour(env) != EnvFlavour::kNone;
}

// The rank and world size variables of the detected flavour, as read: a value is nullopt when
// its variable is unset. For callers that combine them with values of their own (resolve_world
// lets InitOptions override either and names every missing variable in one error).
struct LauncherRankVariables {
  EnvFlavour flavour = EnvFlavour::kNone;
  // The variables' names (see the table above). kNone: the torchrun names, the ones to set by
  // hand; both values are then nullopt (either being set would make the flavour kTorchrun).
  std::string rank_name;
  std::string world_size_name;
  std::optional<long> rank;
  std::optional<long> world_size;
};

// Reads the detected flavour's rank and world size variables. Throws ConfigError naming a
// variable whose value is not a whole number; a missing one is nullopt, not an error.
LauncherRankVariables read_launcher_rank_variables(const EnvMap& env);

// This process's place in the job as the launcher states it.
struct LauncherRank {
  EnvFlavour flavour = EnvFlavour::kNone;
  int rank = 0;
  int world_size = 1;
};

// This process's rank and world size from the detected launcher; no launcher (kNone): rank 0 of
// 1. Throws ConfigError naming the variable(s) when the flavour's set is partial (RANK without
// WORLD_SIZE), a value is not a whole number, the world size is below 1 or the rank is outside
// [0, world size).
LauncherRank launcher_rank(const EnvMap& env);

}  // namespace gradwire
