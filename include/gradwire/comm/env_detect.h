// Which launcher started this process, judged from its environment alone. This is the one
// detector every part of gradwire uses (init, resolve_world, gradwire-bench); nothing else reads
// launcher variables to decide whether a process is a rank of a job.
//
// Rules, first match wins:
//   kTorchrun  RANK or WORLD_SIZE is set (torchrun, gradwire-run, or variables set by hand).
//   kOpenMpi   OMPI_COMM_WORLD_RANK or OMPI_COMM_WORLD_SIZE is set (mpirun). Checked before
//              Slurm: mpirun inside an allocation inherits the allocation's SLURM_* variables.
//   kSlurm     SLURM_PROCID and SLURM_STEP_ID are set: a task of an `srun` step. An `salloc` or
//              `sbatch` shell has the allocation's SLURM_JOB_ID, SLURM_NTASKS, SLURM_NODELIST
//              (sbatch even SLURM_PROCID=0) but no step, so a program started there plainly is
//              not one of SLURM_NTASKS ranks: kNone.
//   kNone      none of these: the process is alone (init() makes a world of one).
// A flavour only says where to look; a partial set of its variables (RANK without WORLD_SIZE,
// MASTER_ADDR missing) is a ConfigError from resolve_world, never a world of one.
//
// Pure and thread-safe: reads only the EnvMap it is given.
#pragma once

#include "gradwire/common/env.h"

namespace gradwire {

enum class EnvFlavour {
  kNone,      // no launcher: a world of one
  kExplicit,  // InitOptions supplied rank, world size, master address and port (never detected)
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

}  // namespace gradwire
