// Watching started workers until every one is reaped (launch-internal).
//
// Phases (checked transitions):
//   kRunning  --worker failed / signal received-->  kStopping  (stop signal sent to every group)
//   kStopping --grace period over / second signal-->  kKilling (SIGKILL sent to every group)
//   kRunning  --grace period 0-->  kKilling
// A worker reaped after leaving kRunning counts as stopped by the launcher.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "gradwire/launch/launcher.h"
#include "output_pump.h"
#include "process.h"
#include "signal_forwarding.h"

namespace gradwire::launch::detail {

struct SupervisedWorker {
  int rank = 0;
  int local_rank = 0;
  WorkerProcess process;
};

struct SupervisorOptions {
  // Time between the stop signal and SIGKILL.
  std::chrono::milliseconds grace_period{5000};
  // Signals to forward; nullptr: none.
  SignalForwarding* signals = nullptr;
  // How long output pipes may stay open after every worker was reaped (a descendant that left
  // the worker's process group can hold them); then they are closed.
  std::chrono::milliseconds drain_timeout{2000};
  // Longest wait between checks for exited workers when the kernel has no pidfds (with pidfds
  // an exit wakes the loop at once and this is only a safety net).
  std::chrono::milliseconds tick{100};
};

class Supervisor {
 public:
  // `workers` ordered by local rank; `pump` carries their output and outlives the supervisor.
  Supervisor(std::vector<SupervisedWorker> workers, OutputPump& pump, SupervisorOptions options);

  // Blocks until every worker is reaped and its output copied. Fills workers,
  // first_failed_local_rank and received_signal of the result (not master_port). Call once.
  LaunchResult run();

 private:
  enum class Phase { kRunning, kStopping, kKilling };
  using Clock = std::chrono::steady_clock;

  void transition(Phase next);
  int poll_timeout_ms(Clock::time_point now) const;
  void wait_for_events(int timeout_ms);
  void handle_signals(const std::vector<int>& signals);
  void reap_exited();
  void stop_all(int signal);
  bool all_reaped() const;

  std::vector<SupervisedWorker> workers_;
  std::vector<std::optional<WorkerExit>> exits_;  // by local rank
  OutputPump& pump_;
  SupervisorOptions options_;
  Phase phase_ = Phase::kRunning;
  Clock::time_point kill_deadline_{};
  std::optional<Clock::time_point> drain_deadline_;
  int first_failed_local_rank_ = -1;
  int received_signal_ = 0;
};

}  // namespace gradwire::launch::detail
