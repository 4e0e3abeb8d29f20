// Pure resolution of WorldInfo from options and an environment snapshot (see world.h). Which
// launcher, and the rank and world size it states, come from the one detector in common
// (gradwire/common/launcher_env.h); this file adds local ranks, the master address and port.
#include <algorithm>
#include <sstream>
#include <vector>

#include "comm/core/slurm_env.h"
#include "gradwire/comm/world.h"
#include "gradwire/common/error.h"
#include "gradwire/common/launcher_env.h"
#include "gradwire/common/settings.h"

namespace gradwire {

namespace {

// Collects the names of missing variables so one error can name all of them.
class Reader {
 public:
  explicit Reader(const EnvMap& env) : env_(env) {}

  std::optional<long> number(const std::string& name, bool required = true) {
    return expect(env_.get_int(name), name, required);
  }
  // A value read elsewhere (the launcher's rank and world size): recorded as missing the same way.
  std::optional<long> expect(std::optional<long> value, const std::string& name, bool required) {
    if (!value && required) missing_.push_back(name);
    return value;
  }
  std::optional<std::string> text(const std::string& name, bool required = true) {
    auto value = env_.get(name);
    if ((!value || value->empty()) && required) {
      missing_.push_back(name);
      return std::nullopt;
    }
    return value;
  }
  const std::vector<std::string>& missing() const { return missing_; }

 private:
  const EnvMap& env_;
  std::vector<std::string> missing_;
};

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

template <typename T>
void take(std::optional<T> explicit_value, std::optional<long> env_value, T& out) {
  if (explicit_value)
    out = *explicit_value;
  else if (env_value)
    out = static_cast<T>(*env_value);
}

// The local variable names of the flavours that differ only in names (rank and world size come
// from read_launcher_rank_variables).
struct LocalNames {
  const char* local_rank;
  const char* local_size;
  const char* hint;
};
constexpr LocalNames kTorchrunNames{"LOCAL_RANK", "LOCAL_WORLD_SIZE", ""};
constexpr LocalNames kOpenMpiNames{"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                   " (pass with mpirun -x)"};

// No launcher and no identity options: rank 0 of 1, alone on its host.
WorldInfo world_of_one(const InitOptions& options) {
  WorldInfo w;
  w.master_addr = options.master_addr.value_or("127.0.0.1");
  w.master_port = options.master_port.value_or(0);
  w.flavour = EnvFlavour::kNone;
  return w;
}

void check_consistent(const WorldInfo& w, const std::string& source) {
  std::vector<std::string> problems;
  if (w.world_size < 1) problems.push_back("world size " + std::to_string(w.world_size) + " < 1");
  if (w.rank < 0 || w.rank >= w.world_size) {
    problems.push_back("rank " + std::to_string(w.rank) + " is not in [0, world size " +
                       std::to_string(w.world_size) + ")");
  }
  if (w.local_world_size < 1 || w.local_world_size > w.world_size) {
    problems.push_back("local world size " + std::to_string(w.local_world_size) +
                       " is not in [1, world size " + std::to_string(w.world_size) + "]");
  }
  if (w.local_rank < 0 || w.local_rank >= w.local_world_size) {
    problems.push_back("local rank " + std::to_string(w.local_rank) +
                       " is not in [0, local world size " + std::to_string(w.local_world_size) +
                       ")");
  }
  if (w.master_port < 0 || w.master_port > 65535) {
    problems.push_back("master port " + std::to_string(w.master_port) + " is not in [0, 65535]");
  }
  if (!problems.empty()) {
    std::string text;
    for (const auto& p : problems) text += "\n  - " + p;
    throw ConfigError("gradwire: inconsistent " + source + " settings:" + text);
  }
}

}  // namespace

WorldInfo resolve_world(const InitOptions& options, const EnvMap& env) {
  const LauncherRankVariables stated = read_launcher_rank_variables(env);
  const EnvFlavour detected = stated.flavour;
  const bool identity_given =
      options.rank || options.world_size || options.local_rank || options.local_world_size;
  if (detected == EnvFlavour::kNone && !identity_given) return world_of_one(options);
  WorldInfo w;
  // Identity options without a launcher: the options must be complete, or the torchrun
  // variables must supply the rest.
  w.flavour = detected == EnvFlavour::kNone ? EnvFlavour::kExplicit : detected;
  Reader read(env);
  std::optional<long> rank, size, local_rank, local_size, port;
  std::optional<std::string> addr;
  // Variables are only required when no explicit option supplies the value.
  const bool need_rank = !options.rank, need_size = !options.world_size;
  const bool need_addr = !options.master_addr, need_port = !options.master_port;
  // The launcher's rank and world size (kExplicit: the torchrun names, unset then).
  rank = read.expect(stated.rank, stated.rank_name, need_rank);
  size = read.expect(stated.world_size, stated.world_size_name, need_size);
  std::string names;
  switch (w.flavour) {
    case EnvFlavour::kNone:  // not reached: replaced by kExplicit above
    case EnvFlavour::kTorchrun:
    case EnvFlavour::kExplicit:
    case EnvFlavour::kOpenMpi: {
      const auto& n = w.flavour == EnvFlavour::kOpenMpi ? kOpenMpiNames : kTorchrunNames;
      names = stated.rank_name + ", " + stated.world_size_name + ", " + n.local_rank + ", " +
              n.local_size + ", MASTER_ADDR, MASTER_PORT" + n.hint;
      local_rank = read.number(n.local_rank, false);
      local_size = read.number(n.local_size, false);
      addr = read.text("MASTER_ADDR", need_addr);
      port = read.number("MASTER_PORT", need_port);
      break;
    }
    case EnvFlavour::kSlurm: {
      names =
          "SLURM_PROCID, SLURM_STEP_NUM_TASKS or SLURM_NTASKS, SLURM_LOCALID, "
          "SLURM_NTASKS_PER_NODE, SLURM_JOB_NODELIST, SLURM_JOB_ID";
      local_rank = read.number("SLURM_LOCALID", false);
      local_size = slurm::local_world_size(env);
      addr = env.get("MASTER_ADDR");
      if (!addr) {
        auto nodelist = env.get("SLURM_JOB_NODELIST");
        if (!nodelist) nodelist = env.get("SLURM_NODELIST");
        if (nodelist)
          addr = slurm::first_host(*nodelist);
        else if (need_addr)
          read.text("SLURM_JOB_NODELIST");
      }
      port = env.get_int("MASTER_PORT");
      if (!port) {
        auto job = read.number("SLURM_JOB_ID", need_port && !env.has("MASTER_PORT"));
        if (job) port = slurm::default_port(*job);
      }
      break;
    }
  }
  if (!read.missing().empty()) {
    throw ConfigError(
        "gradwire: cannot tell who this process is; missing environment variable(s): " +
        join(read.missing()) + " (reading the " + to_string(w.flavour) +
        " environment, which uses " + names +
        "). Start the program with gradwire-run, torchrun --no-python, srun or mpirun, or set "
        "the variables or InitOptions fields yourself.");
  }
  take(options.rank, rank, w.rank);
  take(options.world_size, size, w.world_size);
  // Unknown local size: (0, 1) when nothing local is known, else the world size (upper bound).
  w.local_rank =
      static_cast<int>(options.local_rank ? *options.local_rank : local_rank.value_or(0));
  w.local_world_size = static_cast<int>(
      options.local_world_size
          ? *options.local_world_size
          : local_size.value_or(local_rank || options.local_rank ? w.world_size : 1));
  w.master_addr = options.master_addr ? *options.master_addr : addr.value_or("");
  take(options.master_port, port, w.master_port);
  if (options.rank && options.world_size && options.master_addr && options.master_port) {
    w.flavour = EnvFlavour::kExplicit;
  }
  if (env.get("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True" &&
      !(options.master_addr || options.master_port)) {
    w.agent_store_prefix = "/worker/attempt_" + env.get("TORCHELASTIC_RESTART_COUNT").value_or("0");
  }
  check_consistent(w, to_string(w.flavour));
  return w;
}

int resolve_threads(const InitOptions& options, const EnvMap& env, const WorldInfo& world,
                    int hardware_cores) {
  if (options.threads) return std::max(1, *options.threads);
  if (auto omp = env.get_int("OMP_NUM_THREADS")) return std::max(1L, *omp);
  return std::max(1, hardware_cores / std::max(1, world.local_world_size));
}

InitOptions resolve(const InitOptions& options, const EnvMap& env) {
  InitOptions resolved = options;
  if (!resolved.backend) {
    const std::string chosen = env.get(settings::kBackend.name).value_or("");
    resolved.backend = chosen.empty() ? "auto" : chosen;  // set but empty counts as unset
  }
  if (!resolved.timeout) resolved.timeout = settings::timeout(env);
  if (!resolved.rendezvous_timeout) {
    if (auto text = env.get(settings::kRendezvousTimeout.name)) {
      resolved.rendezvous_timeout = parse_duration(*text, settings::kRendezvousTimeout.name);
    } else {
      resolved.rendezvous_timeout =
          std::max<std::chrono::milliseconds>(*resolved.timeout, settings::kDefaultTimeout);
    }
  }
  return resolved;
}

}  // namespace gradwire
