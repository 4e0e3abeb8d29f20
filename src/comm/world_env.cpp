// Pure resolution of WorldInfo from options and an environment snapshot (see world.h), and the
// one launcher detector (env_detect.h).
#include <algorithm>
#include <sstream>
#include <vector>

#include "gradwire/comm/env_detect.h"
#include "gradwire/comm/world.h"
#include "gradwire/common/error.h"
#include "slurm_env.h"

namespace gradwire {

const char* to_string(EnvFlavour flavour) {
  switch (flavour) {
    case EnvFlavour::kNone:
      return "no launcher";
    case EnvFlavour::kExplicit:
      return "explicit options";
    case EnvFlavour::kTorchrun:
      return "torchrun/gradwire-run";
    case EnvFlavour::kOpenMpi:
      return "Open MPI";
    case EnvFlavour::kSlurm:
      return "Slurm";
  }
  return "unknown";
}

EnvFlavour detect_env_flavour(const EnvMap& env) {
  if (env.has("RANK") || env.has("WORLD_SIZE")) return EnvFlavour::kTorchrun;
  if (env.has("OMPI_COMM_WORLD_RANK") || env.has("OMPI_COMM_WORLD_SIZE")) {
    return EnvFlavour::kOpenMpi;
  }
  // SLURM_STEP_ID marks a task of an srun step; an salloc/sbatch shell has only the allocation.
  if (env.has("SLURM_PROCID") && env.has("SLURM_STEP_ID")) return EnvFlavour::kSlurm;
  return EnvFlavour::kNone;
}

namespace {

// Collects the names of missing variables so one error can name all of them.
class Reader {
 public:
  explicit Reader(const EnvMap& env) : env_(env) {}

  std::optional<long> number(const std::string& name, bool required = true) {
    auto value = env_.get_int(name);
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

// The variable names of the flavours that differ only in names.
struct FlavourNames {
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
  const char* hint;
};
constexpr FlavourNames kTorchrunNames{"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", ""};
constexpr FlavourNames kOpenMpiNames{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
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
  const EnvFlavour detected = detect_env_flavour(env);
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
  std::string names;
  switch (w.flavour) {
    case EnvFlavour::kNone:  // not reached: replaced by kExplicit above
    case EnvFlavour::kTorchrun:
    case EnvFlavour::kExplicit:
    case EnvFlavour::kOpenMpi: {
      const auto& n = w.flavour == EnvFlavour::kOpenMpi ? kOpenMpiNames : kTorchrunNames;
      names = std::string(n.rank) + ", " + n.size + ", " + n.local_rank + ", " + n.local_size +
              ", MASTER_ADDR, MASTER_PORT" + n.hint;
      rank = read.number(n.rank, need_rank);
      size = read.number(n.size, need_size);
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
      rank = read.number("SLURM_PROCID", need_rank);
      // The step's task count: an interactive step inside an allocation has 1 task while
      // SLURM_NTASKS still counts the allocation's.
      size = env.has("SLURM_STEP_NUM_TASKS") ? read.number("SLURM_STEP_NUM_TASKS", need_size)
                                             : read.number("SLURM_NTASKS", need_size);
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
  check_consistent(w, to_string(w.flavour));
  return w;
}

int resolve_intra_op_threads(const InitOptions& options, const EnvMap& env, const WorldInfo& world,
                             int hardware_cores) {
  if (options.intra_op_threads) return std::max(1, *options.intra_op_threads);
  if (auto omp = env.get_int("OMP_NUM_THREADS")) return std::max(1L, *omp);
  return std::max(1, hardware_cores / std::max(1, world.local_world_size));
}

std::chrono::milliseconds resolve_timeout(const InitOptions& options, const EnvMap& env) {
  if (options.timeout) return *options.timeout;
  if (auto text = env.get("GRADWIRE_TIMEOUT")) return parse_duration(*text, "GRADWIRE_TIMEOUT");
  return std::chrono::seconds(300);
}

}  // namespace gradwire
