// Watching the started workers and servers of a launch until every one is reaped
// (launch-internal).
//
// Phases (checked transitions):
//   kRunning  --a process failed / signal received / stop_all()-->  kStopping  (stop signal sent
//             to every process group)
//   kRunning  --every worker reaped while servers run-->  kStopping  (SIGTERM to the servers: the
//             normal end of a job with servers)
//   kStopping --grace period over / second signal-->  kKilling (SIGKILL sent to every group)
//   kRunning  --grace period 0-->  kKilling
//   kRunning  --a worker failed, or a server failed while workers run, and a restart is
//             allowed-->  kRestarting  (SIGTERM to the workers only; SIGKILL to them after the
//             grace period; the other servers keep running)
//   kRestarting --every worker reaped, finish_attempt()-->  kRunning (the caller starts the
//             failed server again, if a server failed, then new workers)
//   kRestarting --signal received / stop_all()-->  kStopping  (a server that dies meanwhile is
//             started again with the next group)
// A process reaped after it was sent a stop signal counts as stopped by the launcher. A worker
// fails when it exits non-zero or is killed; a server fails when it exits before being told to.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gradwire/common/files.h"
#include "gradwire/launch/launcher.h"
#include "output_pump.h"
#include "process.h"
#include "signal_forwarding.h"

namespace gradwire::launch::detail {

enum class ProcessRole { kWorker, kServer };

// Who a supervised process is.
struct ProcessIdentity {
  ProcessRole role = ProcessRole::kWorker;
  int index = 0;  // worker: local rank; server process: its index
  int rank = 0;   // worker: global rank; server process: its index
  // Server process: the servers it hosts (ascending, contiguous) and the HOST:PORT of each.
  std::vector<int> servers;
  std::vector<std::string> addresses;
  // "rank 3", "server 0" or "servers 0-3": the output prefix and the pump's name for it.
  std::string label() const;
};

struct SupervisorOptions {
  // Time between the stop signal and SIGKILL.
  std::chrono::milliseconds grace_period{5000};
  // Signals to forward; nullptr: none.
  SignalForwarding* signals = nullptr;
  // How long output pipes may stay open after every process was reaped (a descendant that left
  // the process group can hold them); then they are closed.
  std::chrono::milliseconds drain_timeout{2000};
  // Longest wait between checks for exited processes when the kernel has no pidfds (with pidfds
  // an exit wakes the loop at once and this is only a safety net).
  std::chrono::milliseconds tick{100};
};

// Not thread-safe; one owner. Destruction kills (SIGKILL) and reaps whatever is still running.
class Supervisor {
 public:
  using Clock = std::chrono::steady_clock;

  // `pump` carries the processes' output and outlives the supervisor.
  Supervisor(OutputPump& pump, SupervisorOptions options);

  // Starts a process (spawn_worker) and supervises it; its output goes to the pump under
  // who.label(), and to `log_file` when valid. Returns its pid. Throws what spawn_worker
  // throws. Workers are started in local-rank order, servers in index order.
  pid_t start(const ProcessIdentity& who, const SpawnRequest& request, UniqueFd log_file);

  enum class WaitOutcome { kDone, kStopping, kDeadline };
  // Supervises (copies output, reaps, forwards signals) until `done()` returns true (kDone), the
  // launch started stopping because a process failed or a signal arrived (kStopping), or
  // `deadline` passes (kDeadline). `done` is called at least every `check_interval`. Blocks.
  WaitOutcome supervise_until(const std::function<bool()>& done, Clock::time_point deadline,
                              std::chrono::milliseconds check_interval);

  // Whether the next failure of a worker, or of a server while some worker runs, stops only the
  // workers (kRestarting) instead of everything. Default false; finish_attempt() resets it.
  void set_restart_allowed(bool allowed) { restart_allowed_ = allowed; }

  // Elastic mode: a worker's failure stops nobody; supervise_elastic() hands it over instead.
  void set_elastic(bool elastic) { elastic_ = elastic; }
  // Elastic mode: supervises until every worker is reaped or the launch is stopping (a signal, a
  // server's failure), calling `on_failure` for each worker that failed on its own (it may
  // start() a replacement). Blocks.
  // `on_tick`, when given, is called about every `tick_interval` (it may start() workers and
  // signal_worker()).
  void supervise_elastic(const std::function<void(const WorkerExit&)>& on_failure,
                         const std::function<void()>& on_tick = {},
                         std::chrono::milliseconds tick_interval = std::chrono::seconds(1));
  // Sends `signal` to the process group of the supervised worker `pid`, if it still runs.
  void signal_worker(pid_t pid, int signal);

  // Supervises the current worker group. Returns true when it failed, a restart was allowed and
  // every worker of it is reaped (call finish_attempt(), then start the next group); false when
  // the launch is ending (all workers done, a signal, a server failure without a restart...:
  // call run()). Blocks.
  bool supervise_attempt();

  // After supervise_attempt() returned true: the failed group's exits and, when a server's exit
  // ended the attempt, that server's, and those of servers that also died (not master_port),
  // which are forgotten; back to kRunning with only the servers still running supervised and
  // restarts not allowed. The caller starts the dead servers again (same identity) before the
  // next group.
  RestartedAttempt finish_attempt();

  // Sends SIGTERM to every process and starts the grace period; they count as stopped by the
  // launcher. No-op once stopping.
  void stop_all();

  // Blocks until every process is reaped and its output copied. Fills workers, servers,
  // first_failed_local_rank, first_failed_server and received_signal of the result (not
  // master_port). Call once, last.
  LaunchResult run();

 private:
  enum class Phase { kRunning, kRestarting, kStopping, kKilling };
  struct Supervised {
    ProcessIdentity who;
    WorkerProcess process;
    std::optional<ProcessExit> exit;
    bool stopped_by_launcher = false;
  };

  void transition(Phase next);
  void begin_stopping(int signal);
  void begin_restarting();
  void signal_workers(int signal);
  bool workers_reaped() const;
  bool stop_sent_to(const Supervised& supervised) const;
  // The fields every exit record (WorkerExit, ServerExit) shares, filled from `supervised`.
  template <typename Exit>
  static Exit exit_record(const Supervised& supervised);
  static WorkerExit worker_exit(const Supervised& supervised);
  static ServerExit server_exit(const Supervised& supervised);
  void step(Clock::time_point wake_by);
  int poll_timeout_ms(Clock::time_point now, Clock::time_point wake_by) const;
  void wait_for_events(int timeout_ms);
  void handle_signals(const std::vector<int>& signals);
  void reap_exited();
  void stop_servers_after_workers();
  void signal_all(int signal);
  bool all_reaped() const;
  LaunchResult collect() const;

  std::vector<Supervised> processes_;  // in start order
  OutputPump& pump_;
  SupervisorOptions options_;
  Phase phase_ = Phase::kRunning;
  Clock::time_point kill_deadline_{};
  std::optional<Clock::time_point> drain_deadline_;
  int first_failed_ = -1;  // index into processes_
  int received_signal_ = 0;
  bool restart_allowed_ = false;
  bool workers_killed_ = false;  // kRestarting: SIGKILL already sent to the workers
  bool elastic_ = false;
  std::vector<size_t> elastic_failures_;  // failed workers not yet handed to supervise_elastic
};

}  // namespace gradwire::launch::detail
