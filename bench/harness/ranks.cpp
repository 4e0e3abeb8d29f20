#include "harness/ranks.h"

#include <ATen/Parallel.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <exception>
#include <iostream>

#include "gradwire/common/env.h"
#include "gradwire/common/error.h"
#include "gradwire/common/settings.h"
#include "gradwire/common/version.h"
#include "gradwire/launch/launcher.h"
#include "harness/report.h"

namespace gradwire::bench {

namespace {
// This very program, whatever its path or name.
constexpr const char* kSelfExe = "/proc/self/exe";
// What the launcher sets in a rank it bound to cores (docs/launcher.md).
constexpr const char* kBoundCpusVariable = settings::kBoundCpus.name;
// Set by launch_ranks in every rank: the cores the launching gradwire-bench may run on, for the
// metadata of ranks that were bound to fewer.
constexpr const char* kLauncherCoresVariable = settings::kBenchLauncherCores.name;
}  // namespace

void add_rank_options(CLI::App& command, RankOptions& options) {
  command
      .add_option("--ranks", options.ranks,
                  "local ranks to start (ignored when already started as a rank of a job)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command
      .add_option("--threads", options.threads_per_rank,
                  "intra-op threads per rank [default: cores / local ranks]")
      ->check(CLI::PositiveNumber);
  add_timeout_option(command, options);
  add_bind_cores_flag(command, options);
  add_worker_flag(command, options);
}

void add_timeout_option(CLI::App& command, RankOptions& options) {
  command.add_option_function<std::string>(
      "--timeout",
      [&options](const std::string& text) { options.timeout = parse_duration(text, "--timeout"); },
      "how long a collective may wait for the other ranks, e.g. 90s or 2h [default: 1h for ddp "
      "and reducers, else 300s]");
}

void add_bind_cores_flag(CLI::App& command, RankOptions& options) {
  command.add_flag("--bind-cores,!--no-bind-cores", options.bind_cores,
                   std::string("bind each local rank this command starts to its own block of "
                               "cores / local ranks, or let them run on every core [") +
                       (options.bind_cores ? "bound" : "not bound") +
                       "] (ignored when already started as a rank of a job)");
}

void add_worker_flag(CLI::App& command, RankOptions& options) {
  // An empty group hides the flag from --help: only run_on_ranks passes it.
  command.add_flag(kWorkerFlag, options.worker, "started by the launcher")->group("");
}

int default_threads_per_rank(int cores, int local_ranks) {
  return std::max(1, cores / std::max(1, local_ranks));
}

std::vector<std::string> user_command(const std::vector<std::string>& argv) {
  std::vector<std::string> command;
  for (const auto& arg : argv) {
    if (arg != kWorkerFlag) command.push_back(arg);
  }
  if (!command.empty() && command.front() == kSelfExe) command.front() = "gradwire-bench";
  return command;
}

namespace {

// The machine's cores as this run sees them: in a rank that gradwire-bench bound to cores itself,
// those the launching gradwire-bench may run on (all the ranks' blocks); otherwise
// available_cores().
int machine_cores(const EnvMap& env, bool bound) {
  if (!bound) return available_cores();
  const std::optional<std::string> launcher_cores = env.get(kLauncherCoresVariable);
  try {
    const int cores = launcher_cores ? std::stoi(*launcher_cores) : 0;
    return cores > 0 ? cores : available_cores();
  } catch (const std::exception&) {  // not a number: not ours
    return available_cores();
  }
}

int run_as_rank(const RankOptions& options, const std::function<int(RankContext&)>& body) {
  InitOptions init_options;
  init_options.backend = options.backend;
  init_options.timeout = options.timeout;
  const EnvMap env = EnvMap::from_process();
  const WorldInfo info = resolve_world(init_options, env);
  try {
    // A bound rank's affinity mask is its own share of the cores already.
    const std::string bound_cpus = env.get(kBoundCpusVariable).value_or("");
    const int threads = options.threads_per_rank.value_or(
        bound_cpus.empty() ? default_threads_per_rank(available_cores(), info.local_world_size)
                           : available_cores());
    // nccl takes one GPU per rank: this rank's is its local rank's, as with torchrun.
    if (options.backend == "nccl") set_cuda_device(info.local_rank);
    auto world = init(init_options);
    // After init, which may apply its own default: the benchmark's choice wins.
    at::set_num_threads(threads);
    auto communicator = world->communicator();
    RankContext context{*world, *communicator, threads, bound_cpus,
                        machine_cores(env, !bound_cpus.empty())};
    return body(context);
  } catch (const std::exception& e) {
    std::cerr << "gradwire-bench: rank " << info.rank << " of " << info.world_size << ": "
              << e.what() << std::endl;
    return 1;
  }
}

int launch_ranks(const RankOptions& options, const std::vector<std::string>& argv) {
  launch::LaunchOptions launch_options;
  launch_options.nproc_per_node = options.ranks;
  launch_options.command = argv;
  launch_options.command.at(0) = kSelfExe;
  launch_options.command.push_back(kWorkerFlag);
  // Only rank 0 prints, and its table should read as if it were this process's own output.
  launch_options.prefix_output = false;
  const int cores = available_cores();
  launch_options.threads_per_worker =
      options.threads_per_rank.value_or(default_threads_per_rank(cores, options.ranks));
  launch_options.bind_cores = options.bind_cores;
  if (!options.timeline.empty()) launch_options.timeline = options.timeline;
  launch_options.extra_env[kLauncherCoresVariable] = std::to_string(cores);
  const launch::LaunchResult result = launch::run_workers(launch_options);
  if (result.exit_code() != 0) {
    std::string summary = result.summary();
    if (!summary.empty() && summary.back() != '\n') summary += '\n';
    std::cerr << "gradwire-bench: ranks failed:\n" << summary << std::flush;
  }
  return result.exit_code();
}

}  // namespace

int run_on_ranks(const RankOptions& options, const std::vector<std::string>& argv,
                 const std::function<int(RankContext&)>& body) {
  const bool in_job = in_launcher_environment(EnvMap::from_process());
  if (options.worker && !in_job) {
    throw ConfigError(std::string(kWorkerFlag) +
                      " is set but RANK/WORLD_SIZE are not: it is only meant for the processes "
                      "gradwire-bench starts itself; run without it");
  }
  if (in_job) return run_as_rank(options, body);
  if (argv.empty()) throw InvalidArgument("run_on_ranks needs the command line to relaunch");
  return launch_ranks(options, argv);
}

RunMetadata run_metadata(const RankContext& context, const std::vector<std::string>& argv) {
  RunMetadata metadata = collect_machine_metadata();
  metadata.gradwire_version = version();
  metadata.torch_version = torch_version();
  metadata.torch_cuda = torch_cuda_version();
  metadata.backend = context.communicator.backend();
  metadata.ranks = context.communicator.size();
  metadata.threads_per_rank = context.threads_per_rank;
  metadata.cores = context.machine_cores;
  metadata.bound_cpus = context.bound_cpus;
  metadata.command = user_command(argv);
  return metadata;
}

RunMetadata conductor_metadata(const std::string& backend, int ranks, int threads_per_rank,
                               const std::vector<std::string>& argv) {
  RunMetadata metadata = collect_machine_metadata();
  metadata.gradwire_version = version();
  metadata.torch_version = torch_version();
  metadata.torch_cuda = torch_cuda_version();
  metadata.backend = backend;
  metadata.ranks = ranks;
  metadata.threads_per_rank = threads_per_rank;
  metadata.command = user_command(argv);
  return metadata;
}

}  // namespace gradwire::bench
