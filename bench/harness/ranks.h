// Giving a benchmark its ranks: join the job this process is already part of (started by
// gradwire-run, torchrun, mpirun or srun), or start N local copies of this program with
// gradwire::launch::run_workers and supervise them. Either way the benchmark body runs once per
// rank with a World built by gradwire::init.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gradwire/comm/world.h"
#include "gradwire/common/env.h"
#include "gradwire/common/launcher_env.h"
#include "harness/report.h"

namespace CLI {
class App;
}

namespace gradwire::bench {

// The hidden flag marking a process started by run_on_ranks (a worker, not the launcher).
inline constexpr const char* kWorkerFlag = "--bench-worker";

struct RankOptions {
  // Local ranks to start when this process is not already a rank of a job.
  int ranks = 2;
  // Intra-op threads per rank (at::set_num_threads); nullopt: max(1, cores / local ranks), or
  // in a rank bound to cores (GRADWIRE_BOUND_CPUS set) the number of its CPUs.
  std::optional<int> threads_per_rank;
  // When this process starts the local ranks itself: bind each to its own block of the CPUs this
  // process may run on (LaunchOptions::bind_cores; docs/launcher.md). Default on, as mpirun's
  // --bind-to core: on 2 cores, 2-rank shm latency otherwise depends on where the scheduler puts
  // the ranks' threads. Training benchmarks turn it off (a bound rank's compute and progress
  // threads then share one core). Ranks of a job started by someone else keep what that launcher
  // gave them.
  bool bind_cores = true;
  // Communicator backend (InitOptions::backend). The benchmarks so far move CPU tensors, so
  // they use "gloo"; not a command-line option until a benchmark places tensors on a GPU.
  std::string backend = "gloo";
  // Set by kWorkerFlag: this process must find its rank in the environment.
  bool worker = false;
  // Timeout of the rendezvous and of every collective (InitOptions::timeout): --timeout; nullopt:
  // the case's default (kTrainingTimeout for ddp and reducers), else gradwire's.
  std::optional<std::chrono::milliseconds> timeout;
  // When this process starts the local ranks itself: their merged timeline
  // (LaunchOptions::timeline; every rank records into "<timeline>.d/", merged into this file when
  // they have exited). Empty: none (the launcher's own rule: GRADWIRE_TIMELINE).
  std::string timeline;
};

// The training cases' timeout (ddp, reducers): idle ranks wait in a barrier while others train,
// which for a large model on a CPU can take many minutes; unless --timeout says otherwise,
// collectives may wait this long.
constexpr std::chrono::hours kTrainingTimeout{1};

// Adds --ranks, --threads, --timeout, --bind-cores/--no-bind-cores and the hidden kWorkerFlag to
// `command`,
// bound to `options` (whose current bind_cores is the default the help shows).
void add_rank_options(CLI::App& command, RankOptions& options);
// Adds --timeout (RankOptions::timeout) to `command`.
void add_timeout_option(CLI::App& command, RankOptions& options);
// Adds only --bind-cores/--no-bind-cores (for benchmarks that add their own --threads).
void add_bind_cores_flag(CLI::App& command, RankOptions& options);
// Adds only the hidden kWorkerFlag (for benchmarks that choose the rank count themselves).
void add_worker_flag(CLI::App& command, RankOptions& options);

// Pure: the default threads per rank, max(1, cores / local_ranks).
int default_threads_per_rank(int cores, int local_ranks);

// Pure: the command line as the user typed it, for reports: kWorkerFlag removed and a relaunched
// worker's "/proc/self/exe" shown as "gradwire-bench".
std::vector<std::string> user_command(const std::vector<std::string>& argv);

// What the body of a benchmark sees on each rank.
struct RankContext {
  World& world;
  Communicator& communicator;
  int threads_per_rank;
  // The CPUs this rank was bound to (GRADWIRE_BOUND_CPUS, "0,1"); empty when it was not bound.
  std::string bound_cpus;
  // The machine's cores as this run sees them: in a rank that gradwire-bench started and bound to
  // cores itself, the cores the launching gradwire-bench may run on (all the ranks' blocks);
  // otherwise available_cores(), the cores this process may run on.
  int machine_cores = 1;
  // Rank 0 prints the results and writes the JSON; the others stay quiet.
  bool reports() const { return communicator.rank() == 0; }
};

// Where and how this run happens, for the JSON: the machine, versions, backend, world size,
// threads per rank and the command line as the user typed it; `cores` is context.machine_cores.
RunMetadata run_metadata(const RankContext& context, const std::vector<std::string>& argv);
// The same for a conductor that starts trainer processes of its own (hybrid, ps): this machine,
// the versions, `backend`, `ranks` trainers of `threads_per_rank` threads, the user's command.
RunMetadata conductor_metadata(const std::string& backend, int ranks, int threads_per_rank,
                               const std::vector<std::string>& argv);

// Runs `body` on every rank and returns this process's exit code.
//  - In a job (gradwire::in_launcher_environment: torchrun/gradwire-run, mpirun or an srun step;
//    not a plain salloc/sbatch shell) or with options.worker: sets the thread count, joins the
//    world (blocks until every rank arrived) and returns body's result. An exception from init or
//    body is printed to stderr with the rank and gives exit code 1.
//  - Otherwise: starts options.ranks copies of /proc/self/exe with `argv` (argv[0] first) plus
//    kWorkerFlag appended, each bound to its own cores when options.bind_cores, waits for them,
//    prints which ranks failed to stderr, and returns 0 when all exited 0, else the launcher's
//    exit code (non-zero).
int run_on_ranks(const RankOptions& options, const std::vector<std::string>& argv,
                 const std::function<int(RankContext&)>& body);

}  // namespace gradwire::bench
