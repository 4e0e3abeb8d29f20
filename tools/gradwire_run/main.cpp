// gradwire-run: starts N local workers of any program with a torchrun-compatible environment and
// supervises them, optionally beside S parameter servers (docs/launcher.md).
//
//   gradwire-run --nproc-per-node N [--nnodes M --node-rank K --master-addr A --master-port P]
//                [--no-prefix] [--log-dir DIR] [--grace-period SECONDS] [--timeline PATH]
//                [--threads-per-worker T] [--bind-cores] [--max-restarts K]
//                [--elastic | --nnodes MIN:MAX] [--min-workers M] [--max-workers M]
//                [--host-discovery COMMAND [--discovery-interval TIME]]
//                [--servers S [--server-processes P] [--server-program PATH]
//                 [--server-arg ARG]... [--server-host H] [--server-ready-timeout TIME]
//                 [--tls-cert FILE --tls-key FILE]]
//                PROGRAM [ARGS...]
//
// Everything from PROGRAM on is passed to the program untouched. With --servers, S servers
// (default program: gradwire-ps-server beside gradwire-run, else on PATH) start first, each with
// the --server-arg values (then --tls-cert/--tls-key when given) and "--listen H:PORT" (a
// process hosting several servers, --server-processes, gets one --listen per server); once all
// accept connections the workers start with GRADWIRE_PS_ADDRS and GRADWIRE_TOKEN (and
// GRADWIRE_TLS_ROOTS); the servers are stopped when the workers are done. With --max-restarts,
// a server process that exits while the workers run is started again on its addresses, then
// the workers. With --timeline PATH (or GRADWIRE_TIMELINE), every worker and server writes its
// timeline into PATH.d/ and gradwire-run merges them into PATH when the job ends (a failed merge
// is a warning: the exit status stays the job's).
// Exit status: 0 when every worker succeeded; the first failed worker's exit code (128+signal
// when killed by a signal), or a failed server's; 128+signal when gradwire-run itself was
// interrupted; 2 for usage errors; 126/127 when the program (or server program) cannot be
// executed; 1 for other launcher errors (e.g. a server that never accepted connections).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gradwire/comm/job_store.h"
#include "gradwire/common/env.h"
#include "gradwire/common/error.h"
#include "gradwire/common/settings.h"
#include "gradwire/common/version.h"
#include "gradwire/launch/launcher.h"

namespace {

constexpr int kUsageError = 2;

// Command-line values that need conversion before they become LaunchOptions.
struct CommandLine {
  gradwire::launch::LaunchOptions options;
  std::string grace_period = "5s";
  int threads_per_worker = 0;  // 0: not given
  std::string server_program;  // empty: the default (LaunchOptions::server_command)
  std::vector<std::string> server_args;
  std::string server_ready_timeout = "30s";
  std::string nproc_per_node = "1";  // a number, gpu, cpu or auto (resolve_nproc_per_node)
  std::string nnodes = "1";          // N, or MIN:MAX for an elastic job
  int min_workers = 0;               // 0: not given
  int max_workers = -1;              // -1: not given
  std::string discovery_interval = "1s";
  std::string timeline;  // empty: not given (LaunchOptions::timeline)
};

void add_options(CLI::App& app, CommandLine& line) {
  auto& options = line.options;
  // Each option also accepts torchrun's underscore spelling (--nproc_per_node).
  app.add_option("-n,--nproc-per-node,--nproc_per_node", line.nproc_per_node,
                 "Workers to start on this node: a number, gpu (one per visible GPU, each with "
                 "LOCAL_RANK to pick its own), cpu (one per CPU) or auto (gpu when a GPU is "
                 "visible, else cpu)")
      ->capture_default_str();
  app.add_option("--nnodes", line.nnodes,
                 "Nodes in the job: N, or MIN:MAX for an elastic job (torchrun's syntax; "
                 "implies --elastic, with --min-workers MIN * nproc-per-node and --max-workers "
                 "MAX * nproc-per-node)")
      ->capture_default_str();
  app.add_flag("--elastic", options.elastic,
               "Elastic job (docs/elastic.md): a failed worker does not stop the others, which go "
               "on without it (gradwire::elastic::run); with --max-restarts K, up to K "
               "replacements start and join at the next commit. gradwire-run (node 0) hosts the "
               "job store at MASTER_ADDR:MASTER_PORT");
  app.add_option("--host-discovery,--host_discovery", options.host_discovery,
                 "Elastic: a shell command printing HOST:SLOTS lines (horovodrun's discovery "
                 "script), run every --discovery-interval; this node runs as many workers as its "
                 "names (hostname, localhost, 127.0.0.1) have slots, growing and shrinking with "
                 "them");
  app.add_option("--discovery-interval,--discovery_interval", line.discovery_interval,
                 "Elastic: how often --host-discovery runs (e.g. 1s, 500ms)")
      ->capture_default_str();
  app.add_option("--min-workers,--min_workers", line.min_workers,
                 "Elastic: the fewest workers (whole job) a generation may have (default 1, or "
                 "MIN * nproc-per-node with --nnodes MIN:MAX)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-workers,--max_workers", line.max_workers,
                 "Elastic: the most workers (whole job) a generation takes; 0: no limit (default, "
                 "or MAX * nproc-per-node with --nnodes MIN:MAX)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--node-rank,--node_rank", options.node_rank, "This node's index in [0, nnodes)")
      ->capture_default_str();
  app.add_option("--master-addr,--master_addr", options.master_addr,
                 "Rendezvous address written to MASTER_ADDR")
      ->capture_default_str();
  app.add_option("--master-port,--master_port", options.master_port,
                 "Rendezvous port written to MASTER_PORT; 0 picks a free one (single node only)")
      ->capture_default_str();
  app.add_flag(
      "--no-prefix,--no_prefix", [&options](int64_t) { options.prefix_output = false; },
      "Do not prefix output lines with [rank N]");
  app.add_option("--log-dir,--log_dir", options.log_dir,
                 "Also write each worker's output to DIR/rank_N.log");
  app.add_option("--timeline", line.timeline,
                 "Record a timeline (docs/timeline.md): every worker and server writes its file "
                 "into PATH.d/ (GRADWIRE_TIMELINE), merged into PATH when the job ends (default: "
                 "GRADWIRE_TIMELINE of this environment, else none)")
      ->type_name("PATH");
  app.add_option("--grace-period,--grace_period", line.grace_period,
                 "Time between SIGTERM and SIGKILL when stopping workers (e.g. 5, 500ms, 1m)")
      ->capture_default_str();
  app.add_option("--threads-per-worker,--threads_per_worker", line.threads_per_worker,
                 "OMP_NUM_THREADS for each worker when the environment does not set it "
                 "(default: cores / nproc-per-node; with --bind-cores the worker's CPU count)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--bind-cores,--bind_cores", options.bind_cores,
               "Bind each worker to its own block of the CPUs gradwire-run may use (cores / "
               "nproc-per-node each, in order; as mpirun --bind-to core); OMP_NUM_THREADS "
               "defaults to the block size, GRADWIRE_BOUND_CPUS lists the worker's CPUs. Default: "
               "off, workers may run on every CPU (as with torchrun)");
  app.add_option("--max-restarts,--max_restarts", options.max_restarts,
                 "Start the workers again after a worker fails, or a server exits while they "
                 "run (that server first, on the same address), up to this many times (new "
                 "rendezvous, same job token; never after a signal to gradwire-run)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--servers", options.servers,
                 "Parameter servers to start before the workers (single node only)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--server-processes,--server_processes", options.server_processes,
                 "Processes hosting the servers, split contiguously (0 or 1..S; 0: automatic, "
                 "one per server when nproc-per-node + S <= the CPUs gradwire-run may use, else "
                 "max(1, min(S, CPUs - nproc-per-node)), fewer processes competing for cores)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--server-program", line.server_program,
                 "Program each server runs (default: gradwire-ps-server beside gradwire-run, "
                 "else on PATH)");
  app.add_option("--server-arg", line.server_args,
                 "Argument for every server, before --listen (repeatable; write "
                 "--server-arg=--flag for values starting with '-')")
      ->expected(1)
      ->allow_extra_args(false)  // one value per --server-arg; PROGRAM follows
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--server-host", options.server_host,
                 "Address the servers listen on and the workers connect to")
      ->capture_default_str();
  app.add_option("--server-ready-timeout", line.server_ready_timeout,
                 "How long each server may take to accept connections (e.g. 30, 30s, 1m)")
      ->capture_default_str();
  app.add_option("--tls-cert", options.tls_cert_file,
                 "PEM certificate the servers serve TLS with (with --tls-key); the workers get it "
                 "as GRADWIRE_TLS_ROOTS, the root their client trusts");
  app.add_option("--tls-key", options.tls_key_file, "PEM private key of --tls-cert");
  app.footer(
      "PROGRAM and everything after it are passed to the workers untouched; use -- before "
      "PROGRAM if its name starts with '-'. See docs/launcher.md for the worker environment.");
}

// Splits what CLI11 left over (from the first non-option on) into the worker command.
std::vector<std::string> worker_command(const CLI::App& app) {
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest.front() == "--") {
    rest.erase(rest.begin());
  } else if (!rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-') {
    throw CLI::ExtrasError({rest.front()});
  }
  return rest;
}

// --nnodes N or MIN:MAX, --elastic, --min-workers, --max-workers -> LaunchOptions.
void apply_nnodes(CommandLine& line) {
  auto& options = line.options;
  auto number = [&](const std::string& text) {
    size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || value < 1) {
      throw gradwire::InvalidArgument(
          "--nnodes: expected N or MIN:MAX (whole numbers >= 1), got '" + line.nnodes + "'");
    }
    return value;
  };
  const size_t colon = line.nnodes.find(':');
  int min_nodes = 0;
  if (colon == std::string::npos) {
    options.nnodes = number(line.nnodes);
  } else {
    min_nodes = number(line.nnodes.substr(0, colon));
    options.nnodes = number(line.nnodes.substr(colon + 1));
    if (min_nodes > options.nnodes) {
      throw gradwire::InvalidArgument("--nnodes " + line.nnodes + ": MIN is above MAX");
    }
    options.elastic = true;
  }
  if (!options.elastic && (line.min_workers != 0 || line.max_workers >= 0)) {
    throw gradwire::InvalidArgument("--min-workers and --max-workers need --elastic");
  }
  options.min_workers = line.min_workers != 0 ? line.min_workers
                        : min_nodes != 0      ? min_nodes * options.nproc_per_node
                                              : 1;
  options.max_workers = line.max_workers >= 0 ? line.max_workers
                        : min_nodes != 0      ? options.nnodes * options.nproc_per_node
                                              : 0;
}

// Elastic mode: node 0 hosts the job store (the workers' rendezvous outlives any of them), every
// node's gradwire-run beats elastic/agent/<node> twice a second and marks its failed workers.
class ElasticAgent {
 public:
  explicit ElasticAgent(gradwire::launch::LaunchOptions& options) {
    const auto timeout = std::chrono::milliseconds(30000);
    store_ = options.node_rank == 0
                 ? gradwire::JobStore::host(options.master_addr, options.master_port, timeout)
                 : gradwire::JobStore::connect(options.master_addr, options.master_port, timeout);
    options.master_port = store_->port();
    const std::string beat_key = "elastic/agent/" + std::to_string(options.node_rank);
    beat_ = std::thread([this, beat_key] {
      std::unique_lock<std::mutex> lock(mutex_);
      while (!stop_) {
        lock.unlock();
        try {
          store_->add(beat_key, 1);
        } catch (const std::exception&) {  // the host of the store is gone: nothing to beat
        }
        lock.lock();
        wake_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stop_; });
      }
    });
    options.on_worker_failed = [this](const gradwire::launch::WorkerExit& exit,
                                      const std::string& id) {
      try {
        store_->set("elastic/exited/" + id, exit.signal != 0
                                                ? "signal " + std::to_string(exit.signal)
                                                : "code " + std::to_string(exit.exit_code));
      } catch (const std::exception& error) {  // the store's host is gone: the others time out
        std::cerr << "gradwire-run: could not tell the job store that worker " << id
                  << " exited: " << error.what() << "\n";
      }
    };
  }
  ~ElasticAgent() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    beat_.join();
  }

 private:
  std::unique_ptr<gradwire::JobStore> store_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread beat_;
};

int run(int argc, char** argv) {
  CLI::App app{"gradwire-run: start and supervise the local workers of a gradwire job"};
  app.prefix_command();  // stop parsing at PROGRAM: its flags belong to it
  CommandLine line;
  add_options(app, line);
  app.set_version_flag("--version",
                       "gradwire-run " + gradwire::version() + " (" + gradwire::built_with() + ")");
  app.add_flag_callback(
      "--print-settings",
      [] {
        std::cout << gradwire::settings::markdown_table();
        throw CLI::Success();
      },
      "Print every GRADWIRE_* variable (name, value, default, who reads it) as a Markdown table, "
      "and exit (docs/configuration.md)");

  try {
    app.parse(argc, argv);
    line.options.command = worker_command(app);
    if (line.options.command.empty()) {
      throw CLI::RequiredError("PROGRAM (the program each worker runs)");
    }
    line.options.nproc_per_node = gradwire::launch::resolve_nproc_per_node(
        line.nproc_per_node, gradwire::EnvMap::from_process(), gradwire::launch::driver_gpu_count(),
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    apply_nnodes(line);
    line.options.discovery_interval =
        gradwire::parse_duration(line.discovery_interval, "--discovery-interval");
    line.options.grace_period = gradwire::parse_duration(line.grace_period, "--grace-period");
    if (!line.timeline.empty()) line.options.timeline = line.timeline;
    if (line.threads_per_worker > 0) line.options.threads_per_worker = line.threads_per_worker;
    if (!line.server_program.empty() || !line.server_args.empty()) {
      // An empty program name stands for the default program.
      line.options.server_command = {line.server_program};
      line.options.server_command.insert(line.options.server_command.end(),
                                         line.server_args.begin(), line.server_args.end());
    }
    line.options.server_ready_timeout =
        gradwire::parse_duration(line.server_ready_timeout, "--server-ready-timeout");
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);  // prints help, version or the error
    return code == 0 ? 0 : kUsageError;
  } catch (const gradwire::Error& error) {
    std::cerr << "gradwire-run: " << error.what() << "\n";
    return kUsageError;
  }

  try {
    std::optional<ElasticAgent> agent;
    if (line.options.elastic) agent.emplace(line.options);
    const gradwire::launch::LaunchResult result = gradwire::launch::run_workers(line.options);
    const int code = result.exit_code();
    if (code != 0 || !result.restarted_attempts.empty()) {
      std::cerr << result.summary() << std::flush;
    }
    return code;
  } catch (const gradwire::launch::ProgramNotExecutable& error) {
    std::cerr << "gradwire-run: " << error.what() << "\n";
    return error.error_number() == ENOENT ? 127 : 126;
  } catch (const gradwire::InvalidArgument& error) {
    std::cerr << error.what() << "\n";
    return kUsageError;
  } catch (const gradwire::Error& error) {
    std::cerr << error.what() << "\n";
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {  // a bug or out of memory: still say what happened
    std::cerr << "gradwire-run: " << error.what() << "\n";
    return 1;
  }
}
