#include "worker_env.h"

#include <algorithm>
#include <climits>
#include <optional>

#include "core_binding.h"
#include "gradwire/common/error.h"
#include "gradwire/common/settings.h"

namespace gradwire::launch::detail {
namespace {

void require(bool condition, const std::string& message) {
  if (!condition) throw InvalidArgument("gradwire-run: " + message);
}

// The parent's value of `name`, or `fallback` when it is unset or empty.
std::string inherited(const EnvMap& parent, const std::string& name,
                      const std::string& fallback = "") {
  std::optional<std::string> value = parent.get(name);
  return value && !value->empty() ? *value : fallback;
}

bool valid_env_name(const std::string& name) {
  return !name.empty() && name.find('=') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

}  // namespace

void validate_launch_options(const LaunchOptions& options) {
  require(!options.command.empty() && !options.command.front().empty(),
          "no program given: pass the program to run and its arguments");
  require(options.nproc_per_node >= 1,
          "nproc_per_node must be at least 1, got " + std::to_string(options.nproc_per_node));
  require(options.nnodes >= 1, "nnodes must be at least 1, got " + std::to_string(options.nnodes));
  require(options.node_rank >= 0 && options.node_rank < options.nnodes,
          "node_rank must be in [0, nnodes) = [0, " + std::to_string(options.nnodes) + "), got " +
              std::to_string(options.node_rank));
  require(static_cast<long long>(options.nnodes) * options.nproc_per_node <= INT_MAX,
          "nnodes * nproc_per_node is too large");
  require(!options.master_addr.empty(), "master_addr must not be empty");
  const auto extra_token = options.extra_env.find(settings::kJobToken.name);
  require(!options.job_token || extra_token == options.extra_env.end() ||
              extra_token->second == *options.job_token,
          "job_token and extra_env's GRADWIRE_JOB_TOKEN differ; give the token one way");
  const auto extra_timeline = options.extra_env.find(settings::kTimeline.name);
  require(!options.timeline || extra_timeline == options.extra_env.end() ||
              extra_timeline->second == *options.timeline,
          "timeline (--timeline) and extra_env's GRADWIRE_TIMELINE differ; name the trace one way");
  require(options.master_port >= 0 && options.master_port <= 65535,
          "master_port must be in [0, 65535], got " + std::to_string(options.master_port));
  require(options.master_port != 0 || options.nnodes == 1,
          "master_port 0 (pick a free port) only works with nnodes == 1: the other nodes cannot "
          "learn the port; pass the same explicit master_port to every node");
  require(!options.elastic || options.master_port != 0,
          "elastic mode needs the job store's master_port (gradwire-run hosts the store first)");
  require(!options.elastic || options.min_workers >= 1,
          "min_workers must be at least 1, got " + std::to_string(options.min_workers));
  require(options.max_workers == 0 || options.max_workers >= options.min_workers,
          "max_workers must be 0 (no limit) or at least min_workers (" +
              std::to_string(options.min_workers) + "), got " +
              std::to_string(options.max_workers));
  require(options.host_discovery.empty() || (options.elastic && !options.bind_cores),
          "host discovery (--host-discovery) needs an elastic job and no core binding");
  require(options.discovery_interval.count() > 0, "discovery_interval must be positive");
  require(!options.elastic || options.servers == 0,
          "elastic mode does not start parameter servers (start them yourself and pass "
          "GRADWIRE_PS_ADDRS)");
  require(options.grace_period.count() >= 0, "grace_period must not be negative");
  require(!options.threads_per_worker || *options.threads_per_worker >= 1,
          "threads_per_worker must be at least 1, got " +
              std::to_string(options.threads_per_worker.value_or(0)));
  require(options.stdout_fd >= 0 && options.stderr_fd >= 0,
          "stdout_fd and stderr_fd must be open file descriptors");
  require(options.servers >= 0,
          "servers must not be negative, got " + std::to_string(options.servers));
  require(options.servers == 0 || options.nnodes == 1,
          "servers (--servers) only works with nnodes == 1; multi-node jobs start their "
          "parameter servers themselves and pass GRADWIRE_PS_ADDRS (and GRADWIRE_TOKEN) to "
          "every node");
  require(options.server_processes >= 0 && options.server_processes <= options.servers,
          options.servers == 0
              ? "server_processes (--server-processes) is for the servers gradwire-run starts; "
                "pass it with --servers, got " +
                    std::to_string(options.server_processes)
              : "server_processes (--server-processes) must be 0 (automatic) or in [1, servers] "
                "= [1, " +
                    std::to_string(options.servers) + "], got " +
                    std::to_string(options.server_processes));
  require(options.servers == 0 || !options.server_host.empty(), "server_host must not be empty");
  require(options.servers == 0 || options.server_ready_timeout.count() > 0,
          "server_ready_timeout must be positive");
  const bool has_cert = !options.tls_cert_file.empty();
  const bool has_key = !options.tls_key_file.empty();
  require(has_cert || !has_key,
          "--tls-key (tls_key_file) needs --tls-cert (tls_cert_file): the servers serve TLS with "
          "both or neither");
  require(has_key || !has_cert,
          "--tls-cert (tls_cert_file) needs --tls-key (tls_key_file): the servers serve TLS with "
          "both or neither");
  require(!has_cert || options.servers > 0,
          "--tls-cert and --tls-key (tls_cert_file, tls_key_file) are for the servers gradwire-run "
          "starts; pass them with --servers");
  require(options.max_restarts >= 0,
          "max_restarts must not be negative, got " + std::to_string(options.max_restarts));
  for (const auto& [name, value] : options.extra_env) {
    require(valid_env_name(name), "extra_env has an invalid variable name '" + name + "'");
    require(value.find('\0') == std::string::npos,
            "extra_env value of " + name + " contains a NUL byte");
  }
}

int default_threads_per_worker(unsigned hardware_threads, int nproc_per_node) {
  const unsigned cores = std::max(1u, hardware_threads);
  const unsigned procs = static_cast<unsigned>(std::max(1, nproc_per_node));
  return static_cast<int>(std::max(1u, cores / procs));
}

// Note [worker allocator]: with glibc's defaults a training loop that frees and re-allocates its
// activations every iteration hands the memory back to the kernel and page-faults it in again
// (dear on a VM: docs/launcher.md, "Allocator"). Workers get glibc's thresholds raised, as
// gradwire-bench's processes do, unless the user chose: GRADWIRE_MALLOC=system, either variable
// set, or an allocator preloaded (LD_PRELOAD).
void apply_allocator_policy(bool tune, const EnvMap& parent,
                            std::map<std::string, std::string>& env) {
  if (!tune) return;
  for (const char* chosen : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "LD_PRELOAD"}) {
    if (parent.get(chosen)) return;
  }
  env["MALLOC_MMAP_THRESHOLD_"] = kWorkerMmapThreshold;
  env["MALLOC_TRIM_THRESHOLD_"] = kWorkerTrimThreshold;
}

int global_rank(const LaunchOptions& options, int local_rank) {
  return options.node_rank * options.nproc_per_node + local_rank;
}

std::string elastic_worker_id(const LaunchOptions& options, const WorkerEnvContext& context,
                              int local_rank) {
  const int incarnation = static_cast<size_t>(local_rank) < context.incarnations.size()
                              ? context.incarnations[local_rank]
                              : 0;
  return std::to_string(options.node_rank) + "." + std::to_string(local_rank) + "." +
         std::to_string(incarnation);
}

std::map<std::string, std::string> worker_env(const LaunchOptions& options,
                                              const WorkerEnvContext& context, int local_rank) {
  GRADWIRE_CHECK_GE(local_rank, 0);
  GRADWIRE_CHECK_LT(local_rank, options.nproc_per_node);
  GRADWIRE_CHECK_NE(context.master_port, 0);

  std::map<std::string, std::string> env = context.parent.values();
  const std::string rank = std::to_string(global_rank(options, local_rank));
  const std::string world_size = std::to_string(options.nnodes * options.nproc_per_node);

  env["RANK"] = rank;
  env["WORLD_SIZE"] = world_size;
  env["LOCAL_RANK"] = std::to_string(local_rank);
  env["LOCAL_WORLD_SIZE"] = std::to_string(options.nproc_per_node);
  env["GROUP_RANK"] = std::to_string(options.node_rank);
  env["ROLE_RANK"] = rank;
  env["ROLE_WORLD_SIZE"] = world_size;
  env["ROLE_NAME"] = "default";
  env["MASTER_ADDR"] = options.master_addr;
  env["MASTER_PORT"] = std::to_string(context.master_port);
  env["TORCHELASTIC_RUN_ID"] =
      inherited(context.parent, "TORCHELASTIC_RUN_ID", context.fresh_run_id);
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(context.restart_count);
  env["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(options.max_restarts);
  env.erase(settings::kBoundCpus.name);
  for (const char* name : {settings::kElasticId.name, settings::kElasticMin.name, settings::kElasticMax.name,
                           settings::kElasticInitial.name}) {
    env.erase(name);
  }
  if (options.elastic) {
    env[settings::kElasticId.name] = elastic_worker_id(options, context, local_rank);
    env[settings::kElasticMin.name] = std::to_string(options.min_workers);
    if (options.max_workers > 0) env[settings::kElasticMax.name] = std::to_string(options.max_workers);
    env[settings::kElasticInitial.name] = std::to_string(options.nnodes * options.nproc_per_node);
  }
  // gradwire-run hosts no store of its own for the workers (rank 0 does), whatever launched it.
  env.erase("TORCHELASTIC_USE_AGENT_STORE");
  int default_threads =
      default_threads_per_worker(context.hardware_threads, options.nproc_per_node);
  if (!context.bound_cpus.empty()) {
    GRADWIRE_CHECK_EQ(context.bound_cpus.size(), static_cast<size_t>(options.nproc_per_node));
    const std::vector<int>& cpus = context.bound_cpus[local_rank];
    GRADWIRE_CHECK(!cpus.empty());
    env[settings::kBoundCpus.name] = cpu_list_text(cpus);
    default_threads = static_cast<int>(cpus.size());
  }
  if (inherited(context.parent, "OMP_NUM_THREADS").empty()) {
    env["OMP_NUM_THREADS"] = std::to_string(options.threads_per_worker.value_or(default_threads));
  }
  apply_allocator_policy(*resolve(options, context.parent).tune_allocator, context.parent, env);
  env[settings::kJobToken.name] = job_token(options, context);
  if (!context.server_addresses.empty()) {
    env[settings::kPsAddrs.name] = join_addresses(context.server_addresses);
    env[settings::kToken.name] = env[settings::kJobToken.name];
    // An inherited value would describe other servers: these speak TLS only when told here.
    env.erase(settings::kTlsRoots.name);
    if (!options.tls_cert_file.empty()) env[settings::kTlsRoots.name] = options.tls_cert_file;
  }
  if (!context.timeline.empty()) env[settings::kTimeline.name] = context.timeline;

  for (const auto& [name, value] : options.extra_env) env[name] = value;
  return env;
}

std::string job_token(const LaunchOptions& options, const WorkerEnvContext& context) {
  return resolve(options, context.parent).job_token.value_or(context.fresh_job_token);
}

std::map<std::string, std::string> server_env(const LaunchOptions& options,
                                              const WorkerEnvContext& context) {
  std::map<std::string, std::string> env = context.parent.values();
  env[settings::kJobToken.name] = job_token(options, context);
  env[settings::kToken.name] = env[settings::kJobToken.name];
  env[settings::kPsAddrs.name] = join_addresses(context.server_addresses);
  if (!context.timeline.empty()) env[settings::kTimeline.name] = context.timeline;
  for (const auto& [name, value] : options.extra_env) env[name] = value;
  return env;
}

std::string host_port(const std::string& host, int port) {
  const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string join_addresses(const std::vector<std::string>& addresses) {
  std::string joined;
  for (const std::string& address : addresses) {
    if (!joined.empty()) joined += ',';
    joined += address;
  }
  return joined;
}

}  // namespace gradwire::launch::detail

namespace gradwire::launch {

LaunchOptions resolve(const LaunchOptions& options, const EnvMap& env) {
  LaunchOptions resolved = options;
  if (resolved.job_token && resolved.job_token->empty()) resolved.job_token.reset();
  if (!resolved.job_token) {
    auto extra = options.extra_env.find(settings::kJobToken.name);
    std::string token = extra != options.extra_env.end() ? extra->second : std::string();
    if (token.empty()) token = env.get(settings::kJobToken.name).value_or("");
    if (!token.empty()) resolved.job_token = token;
  }
  if (!resolved.tune_allocator) {
    resolved.tune_allocator = env.get(settings::kMalloc.name).value_or("") != "system";
  }
  if (resolved.timeline && resolved.timeline->empty()) resolved.timeline.reset();
  if (!resolved.timeline) {
    auto extra = options.extra_env.find(settings::kTimeline.name);
    std::string path = extra != options.extra_env.end() ? extra->second : std::string();
    if (path.empty()) path = env.get(settings::kTimeline.name).value_or("");
    if (!path.empty()) resolved.timeline = path;
  }
  return resolved;
}

}  // namespace gradwire::launch
