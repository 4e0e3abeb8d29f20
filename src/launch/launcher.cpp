// run_workers: validates the options, prepares environments and log files, starts the servers
// (server_group) and then the workers under the Supervisor, and merges the job's timeline at the
// end (job_timeline). The pieces live in worker_env (pure), core_binding (which CPUs each worker
// gets), process (fork/exec), output_pump, signal_forwarding, server_group and supervisor.
#include "gradwire/launch/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>

#include "core_binding.h"
#include "gradwire/common/env.h"
#include "gradwire/common/error.h"
#include "gradwire/common/files.h"
#include "host_discovery.h"
#include "job_timeline.h"
#include "output_pump.h"
#include "process.h"
#include "server_group.h"
#include "server_processes.h"
#include "signal_forwarding.h"
#include "supervisor.h"
#include "worker_env.h"

namespace gradwire::launch {
namespace {

// `chars` random hex digits from /dev/urandom.
std::string random_hex(size_t chars) {
  UniqueFd urandom(::open("/dev/urandom", O_RDONLY | O_CLOEXEC));
  std::string bytes((chars + 1) / 2, '\0');
  size_t filled = 0;
  while (urandom.valid() && filled < bytes.size()) {
    ssize_t got = ::read(urandom.get(), bytes.data() + filled, bytes.size() - filled);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    filled += static_cast<size_t>(got);
  }
  if (filled < bytes.size()) {
    throw Error(std::string("gradwire-run: cannot read /dev/urandom: ") + std::strerror(errno));
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char byte : bytes) {
    hex += kDigits[byte >> 4];
    hex += kDigits[byte & 0xf];
  }
  hex.resize(chars);
  return hex;
}

// rank_N.log for every local worker (global rank N).
std::vector<std::string> worker_log_names(const LaunchOptions& options) {
  std::vector<std::string> names;
  for (int local = 0; local < options.nproc_per_node; ++local) {
    names.push_back("rank_" + std::to_string(detail::global_rank(options, local)) + ".log");
  }
  return names;
}

// The CPUs this launcher may use (its affinity mask), which decide how many processes host the
// servers; the hardware threads when the mask cannot be read.
int launcher_cores(unsigned hardware_threads) {
  try {
    return static_cast<int>(detail::allowed_cpus_of_this_process().size());
  } catch (const Error&) {
    return static_cast<int>(std::max(1u, hardware_threads));
  }
}

// Blocks SIGPIPE in the calling thread while alive, so that a closed stdout_fd makes writes fail
// with EPIPE instead of killing the process; a SIGPIPE raised meanwhile is discarded.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&sigpipe_);
    sigaddset(&sigpipe_, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &sigpipe_, &original_);
  }
  ~ScopedSigpipeBlock() {
    if (!sigismember(&original_, SIGPIPE)) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE)) {
        timespec no_wait{};
        ::sigtimedwait(&sigpipe_, nullptr, &no_wait);
      }
    }
    ::pthread_sigmask(SIG_SETMASK, &original_, nullptr);
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

  // The caller's mask from before the block: what workers start with.
  const sigset_t& original() const { return original_; }

 private:
  sigset_t sigpipe_;
  sigset_t original_;
};

// Workers are reaped with waitpid(); with SIGCHLD ignored the kernel reaps them first.
void require_waitable_children() {
  struct sigaction child_action {};
  ::sigaction(SIGCHLD, nullptr, &child_action);
  if (child_action.sa_handler == SIG_IGN || (child_action.sa_flags & SA_NOCLDWAIT) != 0) {
    throw Error(
        "gradwire-run: SIGCHLD is ignored in this process, so worker exit statuses cannot be "
        "collected; restore the default SIGCHLD disposition before calling run_workers");
  }
}

// Starts local worker `local` (its environment from `context`) under the supervisor.
pid_t start_worker(const LaunchOptions& options, const detail::WorkerEnvContext& context,
                   const sigset_t& signal_mask, int local, UniqueFd log,
                   detail::Supervisor& supervisor) {
  detail::ProcessIdentity who;
  who.role = detail::ProcessRole::kWorker;
  who.index = local;
  who.rank = detail::global_rank(options, local);
  detail::SpawnRequest request;
  request.argv = options.command;
  request.env = detail::worker_env(options, context, local);
  request.signal_mask = signal_mask;
  if (!context.bound_cpus.empty()) request.cpus = context.bound_cpus[local];
  return supervisor.start(who, request, std::move(log));
}

// Starts the workers of one attempt; on an error, stops everything started so far (servers
// included, as after a failure) and rethrows. `logs` are moved from (invalid on later attempts).
void start_worker_group(const LaunchOptions& options, const detail::WorkerEnvContext& context,
                        const sigset_t& signal_mask, std::vector<UniqueFd>& logs,
                        detail::Supervisor& supervisor) {
  try {
    for (int local = 0; local < options.nproc_per_node; ++local) {
      start_worker(options, context, signal_mask, local, std::move(logs[local]), supervisor);
    }
  } catch (const std::exception&) {
    supervisor.stop_all();
    supervisor.run();
    throw;
  }
}

// "gradwire-run: rank 1 (pid 123) killed by signal 9 (SIGKILL); restarting the workers
// (restart 1 of 3)" on the launcher's stderr, or for a server process "gradwire-run: server 0
// (127.0.0.1:4000, pid 124) killed by signal 9 (SIGKILL) while the trainers ran; restarting it
// and the workers (restart 1 of 3)" ("server process 0 (servers 0-3: ..., pid 124)" for one
// hosting several servers).
void announce_restart(const LaunchOptions& options, const RestartedAttempt& attempt,
                      int restart_count) {
  std::string what = "a worker failed; restarting the workers";
  if (const std::optional<ServerExit>& failed = attempt.failed_server) {
    what = detail::describe_server_exit(*failed) + " " +
           detail::describe_exit(detail::ProcessExit{failed->exit_code, failed->signal}) +
           " while the trainers ran; restarting it and the workers";
  } else if (attempt.first_failed_local_rank >= 0) {
    const WorkerExit& failed = attempt.workers[attempt.first_failed_local_rank];
    what = "rank " + std::to_string(failed.rank) + " (pid " + std::to_string(failed.pid) + ") " +
           detail::describe_exit(detail::ProcessExit{failed.exit_code, failed.signal}) +
           "; restarting the workers";
  }
  std::string line = "gradwire-run: " + what + " (restart " + std::to_string(restart_count) +
                     " of " + std::to_string(options.max_restarts) + ")\n";
  for (const ServerExit& also : attempt.also_failed_servers) {
    line += "gradwire-run: " + detail::describe_server_exit(also) + " " +
            detail::describe_exit(detail::ProcessExit{also.exit_code, also.signal}) +
            " too; restarting it with the workers\n";
  }
  write_fully(options.stderr_fd, line.data(), line.size());
}

// A fresh rendezvous port for a restart (torchrun's c10d rendezvous picks one each round), never
// a server's: a server that died frees its port until it is started again.
int pick_master_port(const LaunchOptions& options, const detail::ServerPlan& servers) {
  constexpr int kAttempts = 100;
  for (int attempt = 0;; ++attempt) {
    const int port = pick_free_port(options.master_addr);
    const bool taken =
        std::find(servers.ports.begin(), servers.ports.end(), port) != servers.ports.end();
    if (!taken || attempt == kAttempts) return port;
  }
}

// Elastic mode: the workers' places on this node. A place holds one worker at a time; how many it
// held before is the place's entry in WorkerEnvContext::incarnations.
struct ElasticPlace {
  pid_t pid = -1;
  bool running = false;
  bool retiring = false;  // sent SIGTERM because the host discovery wants fewer workers
};

// Elastic mode: starts the workers and supervises them. Each failed one is reported
// (on_worker_failed) and, while max_restarts allows and the node wants it, replaced in its place
// by a worker of the next incarnation; with host discovery the node grows and shrinks to the
// slots the script gives it.
LaunchResult supervise_elastic(const LaunchOptions& options, detail::WorkerEnvContext& context,
                               const sigset_t& signal_mask, std::vector<UniqueFd>& logs,
                               detail::Supervisor& supervisor) {
  std::vector<WorkerExit> tolerated;
  int replacements = 0;
  int wanted = options.nproc_per_node;
  std::vector<ElasticPlace> places(options.nproc_per_node);
  context.incarnations.assign(places.size(), 0);
  // worker_env's layout grows with the places (LOCAL_WORLD_SIZE, the ids' slot numbers).
  LaunchOptions layout = options;
  auto start_in = [&](int place, UniqueFd log) {
    layout.nproc_per_node = std::max(layout.nproc_per_node, place + 1);
    places[place].pid =
        start_worker(layout, context, signal_mask, place, std::move(log), supervisor);
    places[place].running = true;
    places[place].retiring = false;
  };
  auto running = [&] {
    return static_cast<int>(std::count_if(places.begin(), places.end(), [](const ElasticPlace& p) {
      return p.running && !p.retiring;
    }));
  };
  auto say = [&](const std::string& line) {
    write_fully(options.stderr_fd, line.data(), line.size());
  };
  for (int place = 0; place < options.nproc_per_node; ++place) {
    start_in(place, std::move(logs[place]));
  }
  supervisor.set_elastic(true);
  auto on_failure = [&](const WorkerExit& failed) {
    tolerated.push_back(failed);
    const int place = failed.local_rank;
    const std::string id = detail::elastic_worker_id(options, context, place);
    if (options.on_worker_failed) options.on_worker_failed(failed, id);
    const bool retired = places[place].retiring;
    places[place].running = false;
    places[place].retiring = false;
    std::string line = "gradwire-run: worker " + id + " (rank " + std::to_string(failed.rank) +
                       ", pid " + std::to_string(failed.pid) + ") " +
                       detail::describe_exit(detail::ProcessExit{failed.exit_code, failed.signal});
    const bool replace = !retired && replacements < options.max_restarts && running() < wanted;
    if (retired) {
      line += " after the host discovery asked for fewer workers; the others go on\n";
    } else if (replace) {
      ++replacements;
      line += "; the others go on, and a replacement starts (" + std::to_string(replacements) +
              " of " + std::to_string(options.max_restarts) + ")\n";
    } else {
      line += "; the others go on without it (no replacements left)\n";
    }
    say(line);
    ++context.incarnations[place];
    // A replacement writes to its place's log (the pump keeps it by label).
    if (replace) start_in(place, UniqueFd());
  };
  auto on_tick = [&] {
    int slots = 0;
    try {
      const std::string output =
          detail::run_discovery_script(options.host_discovery, std::chrono::seconds(10));
      for (const std::string& name : detail::local_host_names()) {
        slots += detail::discovered_slots(output, name);
      }
    } catch (const Error& error) {  // keep the workers as they are
      say(std::string("gradwire-run: ") + error.what() + "; the workers stay as they are\n");
      return;
    }
    if (slots == wanted) return;
    say("gradwire-run: host discovery: this node now has " + std::to_string(slots) +
        " slot(s), was " + std::to_string(wanted) + "\n");
    wanted = slots;
    // Grow in the lowest free places, shrink from the highest.
    for (int place = 0; running() < wanted; ++place) {
      if (place == static_cast<int>(places.size())) {
        places.emplace_back();
        context.incarnations.push_back(0);
      }
      if (!places[place].running) start_in(place, UniqueFd());
    }
    for (int place = static_cast<int>(places.size()) - 1; running() > wanted; --place) {
      if (places[place].running && !places[place].retiring) {
        places[place].retiring = true;
        supervisor.signal_worker(places[place].pid, SIGTERM);
      }
    }
  };
  if (options.host_discovery.empty()) {
    supervisor.supervise_elastic(on_failure);
  } else {
    supervisor.supervise_elastic(on_failure, on_tick, options.discovery_interval);
  }
  LaunchResult result = supervisor.run();
  result.elastic = true;
  result.tolerated_failures = std::move(tolerated);
  result.master_port = context.master_port;
  return result;
}

// run_workers without the timeline's merge; `timeline`: GRADWIRE_TIMELINE for every process.
LaunchResult launch_and_supervise(const LaunchOptions& options, const EnvMap& parent,
                                  const std::optional<std::string>& timeline) {
  require_waitable_children();

  detail::WorkerEnvContext context;
  context.parent = parent;
  context.timeline = timeline.value_or("");
  context.master_port =
      options.master_port != 0 ? options.master_port : pick_free_port(options.master_addr);
  context.fresh_run_id = random_hex(16);
  context.fresh_job_token = random_hex(32);
  context.hardware_threads = std::thread::hardware_concurrency();
  if (options.bind_cores) {
    const std::vector<int> allowed = detail::allowed_cpus_of_this_process();
    detail::CoreBindingPlan binding = detail::plan_core_binding(allowed, options.nproc_per_node);
    if (binding.shared) {
      const std::string notice = detail::shared_cores_notice(allowed, options.nproc_per_node);
      write_fully(options.stderr_fd, notice.data(), notice.size());
    }
    context.bound_cpus = std::move(binding.worker_cpus);
  }
  const int cores = options.servers > 0 ? launcher_cores(context.hardware_threads) : 1;
  const detail::ServerPlan servers = detail::plan_servers(options, context.master_port, cores);
  context.server_addresses = servers.addresses;

  std::vector<UniqueFd> worker_logs =
      detail::open_log_files(options.log_dir, worker_log_names(options));
  std::vector<UniqueFd> server_logs =
      detail::open_log_files(options.log_dir, detail::server_log_names(servers));

  // Declaration order is destruction order in reverse: on an exception the started processes
  // are killed and reaped first, then the pipes close and the signal handlers are restored.
  ScopedSigpipeBlock sigpipe_block;
  std::optional<detail::SignalForwarding> forwarding;
  if (options.forward_signals) forwarding.emplace();
  detail::OutputPump pump({options.prefix_output, options.stdout_fd, options.stderr_fd});
  detail::SupervisorOptions supervision;
  supervision.grace_period = options.grace_period;
  supervision.signals = forwarding ? &*forwarding : nullptr;
  detail::Supervisor supervisor(pump, supervision);

  // The same for every server, also one started again.
  const std::map<std::string, std::string> server_env = detail::server_env(options, context);
  if (options.servers > 0) {
    std::optional<LaunchResult> interrupted = detail::start_servers(
        servers, options, server_env, sigpipe_block.original(), std::move(server_logs), supervisor);
    if (interrupted) {
      interrupted->master_port = context.master_port;
      return *interrupted;
    }
  }

  if (options.elastic) {
    return supervise_elastic(options, context, sigpipe_block.original(), worker_logs, supervisor);
  }

  std::vector<RestartedAttempt> restarted;
  std::map<int, int> server_restarts;  // server process -> times started again
  for (;;) {
    // Log files are opened once: a restarted worker appends to its predecessor's log.
    start_worker_group(options, context, sigpipe_block.original(), worker_logs, supervisor);
    supervisor.set_restart_allowed(context.restart_count < options.max_restarts);
    if (!supervisor.supervise_attempt()) break;
    RestartedAttempt attempt = supervisor.finish_attempt();
    attempt.master_port = context.master_port;
    // torchrun's rendezvous: a picked port is picked again, a given one is kept.
    if (options.master_port == 0) context.master_port = pick_master_port(options, servers);
    ++context.restart_count;
    announce_restart(options, attempt, context.restart_count);
    std::vector<ServerExit> dead_servers = attempt.also_failed_servers;
    if (attempt.failed_server) dead_servers.insert(dead_servers.begin(), *attempt.failed_server);
    restarted.push_back(std::move(attempt));
    for (const ServerExit& dead : dead_servers) {
      // The whole process: same command line, addresses and environment; the servers restore
      // their own state. Its restart count (TORCHELASTIC_RESTART_COUNT, as workers get theirs)
      // names its timeline file apart from its predecessor's (docs/timeline.md).
      std::map<std::string, std::string> restarted_env = server_env;
      restarted_env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(++server_restarts[dead.index]);
      std::optional<LaunchResult> interrupted = detail::restart_server(
          servers, dead.index, options, restarted_env, sigpipe_block.original(), supervisor);
      if (interrupted) {
        interrupted->master_port = context.master_port;
        interrupted->restarted_attempts = std::move(restarted);
        return *interrupted;
      }
    }
  }

  LaunchResult result = supervisor.run();
  result.master_port = context.master_port;
  result.restarted_attempts = std::move(restarted);
  return result;
}

// The launcher's working directory, against which a relative timeline path is made absolute.
std::string launcher_working_directory() {
  std::error_code error;
  const std::filesystem::path cwd = std::filesystem::current_path(error);
  return error ? std::string(".") : cwd.string();
}

}  // namespace

LaunchResult run_workers(const LaunchOptions& options) {
  detail::validate_launch_options(options);
  const EnvMap parent = EnvMap::from_process();
  const std::optional<std::string> timeline =
      detail::job_timeline_path(options, parent, launcher_working_directory());
  if (!timeline) return launch_and_supervise(options, parent, std::nullopt);
  // Merged whatever the outcome: a failed job's timeline is the one worth reading.
  const detail::JobTimeline job_timeline(*timeline);
  LaunchResult result;
  try {
    result = launch_and_supervise(options, parent, timeline);
  } catch (...) {
    job_timeline.merge(options.stderr_fd, /*quiet_without_files=*/true);
    throw;
  }
  job_timeline.merge(options.stderr_fd);
  return result;
}

}  // namespace gradwire::launch
