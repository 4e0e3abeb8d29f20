#include "supervisor.h"

#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>

#include "gradwire/common/error.h"
#include "server_processes.h"

namespace gradwire::launch::detail {

std::string ProcessIdentity::label() const {
  return role == ProcessRole::kServer ? server_process_label(servers)
                                      : "rank " + std::to_string(rank);
}

Supervisor::Supervisor(OutputPump& pump, SupervisorOptions options)
    : pump_(pump), options_(options) {}

pid_t Supervisor::start(const ProcessIdentity& who, const SpawnRequest& request,
                        UniqueFd log_file) {
  GRADWIRE_CHECK(phase_ == Phase::kRunning);
  SpawnedWorker spawned = spawn_worker(request);
  pump_.add_source(who.label(), std::move(spawned.stdout_read), std::move(spawned.stderr_read),
                   std::move(log_file));
  const pid_t pid = spawned.process.pid();
  processes_.push_back(Supervised{who, std::move(spawned.process), std::nullopt, false});
  return pid;
}

void Supervisor::transition(Phase next) {
  const bool allowed =
      (phase_ == Phase::kRunning && next != Phase::kRunning) ||
      (phase_ == Phase::kRestarting && (next == Phase::kRunning || next == Phase::kStopping)) ||
      (phase_ == Phase::kStopping && next == Phase::kKilling);
  GRADWIRE_CHECK(allowed);
  phase_ = next;
}

bool Supervisor::all_reaped() const {
  return std::all_of(processes_.begin(), processes_.end(),
                     [](const Supervised& supervised) { return supervised.exit.has_value(); });
}

void Supervisor::signal_all(int signal) {
  for (Supervised& supervised : processes_) supervised.process.signal_group(signal);
}

bool Supervisor::workers_reaped() const {
  return std::all_of(processes_.begin(), processes_.end(), [](const Supervised& supervised) {
    return supervised.who.role != ProcessRole::kWorker || supervised.exit.has_value();
  });
}

void Supervisor::signal_workers(int signal) {
  for (Supervised& supervised : processes_) {
    if (supervised.who.role == ProcessRole::kWorker) supervised.process.signal_group(signal);
  }
}

bool Supervisor::stop_sent_to(const Supervised& supervised) const {
  if (phase_ == Phase::kRestarting) return supervised.who.role == ProcessRole::kWorker;
  return phase_ != Phase::kRunning;
}

void Supervisor::begin_restarting() {
  signal_workers(SIGTERM);
  transition(Phase::kRestarting);
  workers_killed_ = false;
  kill_deadline_ = Clock::now() + options_.grace_period;
}

void Supervisor::begin_stopping(int signal) {
  signal_all(signal);
  transition(Phase::kStopping);
  kill_deadline_ = Clock::now() + options_.grace_period;
}

void Supervisor::stop_all() {
  if (phase_ == Phase::kRunning || phase_ == Phase::kRestarting) begin_stopping(SIGTERM);
}

void Supervisor::handle_signals(const std::vector<int>& signals) {
  for (int signal : signals) {
    if (received_signal_ == 0) received_signal_ = signal;
    if (phase_ == Phase::kRunning || phase_ == Phase::kRestarting) {
      // Forward the signal itself: the processes may shut down gracefully on SIGINT/SIGTERM.
      begin_stopping(signal);
    } else if (phase_ == Phase::kStopping) {
      // A second signal (Ctrl-C twice): do not wait for the grace period.
      signal_all(SIGKILL);
      transition(Phase::kKilling);
    }
  }
}

void Supervisor::reap_exited() {
  int newly_failed = -1;
  for (size_t i = 0; i < processes_.size(); ++i) {
    Supervised& supervised = processes_[i];
    if (supervised.exit) continue;
    // Decided before reaping: a process that exited before any stop signal sent below failed
    // on its own.
    const bool stop_already_sent = stop_sent_to(supervised);
    supervised.exit = supervised.process.try_reap();
    if (!supervised.exit) continue;
    supervised.stopped_by_launcher = stop_already_sent;
    // A server is meant to run until it is told to stop: any exit before that is a failure.
    const bool failed = supervised.who.role == ProcessRole::kServer ||
                        supervised.exit->signal != 0 || supervised.exit->exit_code != 0;
    if (!stop_already_sent && failed && elastic_ && phase_ == Phase::kRunning &&
        supervised.who.role == ProcessRole::kWorker) {
      elastic_failures_.push_back(i);  // the others go on without it
      continue;
    }
    if (!stop_already_sent && failed && newly_failed < 0) newly_failed = static_cast<int>(i);
  }
  if (newly_failed < 0) return;
  const bool worker_failed = processes_[newly_failed].who.role == ProcessRole::kWorker;
  if (phase_ == Phase::kRunning) {
    first_failed_ = newly_failed;
    // A server that exits once every worker is done (in the same wake-up) restarts nothing: the
    // job is over.
    if (restart_allowed_ && (worker_failed || !workers_reaped())) {
      begin_restarting();
    } else {
      begin_stopping(SIGTERM);
    }
  }
  // In kRestarting a server that dies (while the workers are being stopped) is started again with
  // the next group: finish_attempt() hands it back with the one that ended the attempt.
}

void Supervisor::stop_servers_after_workers() {
  if (phase_ != Phase::kRunning) return;
  bool any_worker = false;
  bool workers_running = false;
  bool servers_running = false;
  for (const Supervised& supervised : processes_) {
    const bool worker = supervised.who.role == ProcessRole::kWorker;
    any_worker = any_worker || worker;
    if (!supervised.exit) (worker ? workers_running : servers_running) = true;
  }
  // The normal end of a job with servers: no failure is recorded.
  if (any_worker && !workers_running && servers_running) begin_stopping(SIGTERM);
}

int Supervisor::poll_timeout_ms(Clock::time_point now, Clock::time_point wake_by) const {
  const bool exits_wake_us =
      std::all_of(processes_.begin(), processes_.end(), [](const Supervised& supervised) {
        return supervised.process.reaped() || supervised.process.exit_fd() >= 0;
      });
  std::chrono::milliseconds timeout = exits_wake_us ? 10 * options_.tick : options_.tick;
  timeout = std::min(timeout, std::chrono::ceil<std::chrono::milliseconds>(wake_by - now));
  if (phase_ == Phase::kStopping || (phase_ == Phase::kRestarting && !workers_killed_)) {
    timeout = std::min(timeout, std::chrono::ceil<std::chrono::milliseconds>(kill_deadline_ - now));
  }
  if (drain_deadline_) {
    timeout =
        std::min(timeout, std::chrono::ceil<std::chrono::milliseconds>(*drain_deadline_ - now));
  }
  return static_cast<int>(std::max<long long>(0, timeout.count()));
}

void Supervisor::wait_for_events(int timeout_ms) {
  // Layout: [output pipes...][exit fds...][signal fd]. Exit fds only wake the loop;
  // reap_exited() runs after every wake-up anyway.
  std::vector<pollfd> fds;
  for (int fd : pump_.fds()) fds.push_back({fd, POLLIN, 0});
  const size_t pipe_count = fds.size();
  for (const Supervised& supervised : processes_) {
    if (supervised.process.exit_fd() >= 0) {
      fds.push_back({supervised.process.exit_fd(), POLLIN, 0});
    }
  }
  const bool watch_signals = options_.signals != nullptr;
  if (watch_signals) fds.push_back({options_.signals->fd(), POLLIN, 0});

  const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
  if (ready <= 0) return;  // timeout, or EINTR (a signal: its byte is read next time)
  if (watch_signals && fds.back().revents != 0) {
    handle_signals(options_.signals->take_signals());
  }
  for (size_t i = 0; i < pipe_count; ++i) {
    if (fds[i].revents != 0) pump_.on_readable(fds[i].fd);
  }
}

void Supervisor::step(Clock::time_point wake_by) {
  wait_for_events(poll_timeout_ms(Clock::now(), wake_by));
  reap_exited();
  stop_servers_after_workers();
  if (phase_ == Phase::kStopping && Clock::now() >= kill_deadline_) {
    signal_all(SIGKILL);
    transition(Phase::kKilling);
  }
  if (phase_ == Phase::kRestarting && !workers_killed_ && Clock::now() >= kill_deadline_) {
    signal_workers(SIGKILL);
    workers_killed_ = true;
  }
}

bool Supervisor::supervise_attempt() {
  for (;;) {
    if (phase_ == Phase::kRestarting && workers_reaped()) return true;
    if (phase_ == Phase::kStopping || phase_ == Phase::kKilling) return false;
    if (phase_ == Phase::kRunning && workers_reaped()) return false;  // all succeeded
    step(Clock::now() + 10 * options_.tick);
  }
}

void Supervisor::supervise_elastic(const std::function<void(const WorkerExit&)>& on_failure,
                                   const std::function<void()>& on_tick,
                                   std::chrono::milliseconds tick_interval) {
  Clock::time_point next_tick = Clock::now() + tick_interval;
  for (;;) {
    std::vector<size_t> failed;
    failed.swap(elastic_failures_);
    for (size_t i : failed) on_failure(worker_exit(processes_[i]));  // may start() more
    if (phase_ != Phase::kRunning || workers_reaped()) return;
    if (on_tick && Clock::now() >= next_tick) {
      on_tick();
      next_tick = Clock::now() + tick_interval;
      continue;
    }
    step(on_tick ? std::min(next_tick, Clock::now() + 10 * options_.tick)
                 : Clock::now() + 10 * options_.tick);
  }
}

void Supervisor::signal_worker(pid_t pid, int signal) {
  for (Supervised& supervised : processes_) {
    if (supervised.who.role == ProcessRole::kWorker && supervised.process.pid() == pid &&
        !supervised.exit) {
      supervised.process.signal_group(signal);
    }
  }
}

RestartedAttempt Supervisor::finish_attempt() {
  GRADWIRE_CHECK(phase_ == Phase::kRestarting);
  GRADWIRE_CHECK(workers_reaped());
  RestartedAttempt attempt;
  std::vector<Supervised> servers;
  for (size_t i = 0; i < processes_.size(); ++i) {
    Supervised& supervised = processes_[i];
    const bool first_failure = first_failed_ == static_cast<int>(i);
    if (supervised.who.role != ProcessRole::kWorker) {
      // Reaped servers died on their own (servers are not told to stop for a restart): the caller
      // starts them again.
      if (first_failure) {
        attempt.failed_server = server_exit(supervised);
      } else if (supervised.exit) {
        attempt.also_failed_servers.push_back(server_exit(supervised));
      } else {
        servers.push_back(std::move(supervised));
      }
      continue;
    }
    if (first_failure) attempt.first_failed_local_rank = static_cast<int>(attempt.workers.size());
    attempt.workers.push_back(worker_exit(supervised));
  }
  std::sort(attempt.also_failed_servers.begin(), attempt.also_failed_servers.end(),
            [](const ServerExit& a, const ServerExit& b) { return a.index < b.index; });
  processes_ = std::move(servers);
  first_failed_ = -1;
  restart_allowed_ = false;
  transition(Phase::kRunning);
  return attempt;
}

template <typename Exit>
Exit Supervisor::exit_record(const Supervised& supervised) {
  Exit exit;
  exit.pid = supervised.process.pid();
  exit.exit_code = supervised.exit->exit_code;
  exit.signal = supervised.exit->signal;
  exit.stopped_by_launcher = supervised.stopped_by_launcher;
  return exit;
}

WorkerExit Supervisor::worker_exit(const Supervised& supervised) {
  auto exit = exit_record<WorkerExit>(supervised);
  exit.rank = supervised.who.rank;
  exit.local_rank = supervised.who.index;
  return exit;
}

ServerExit Supervisor::server_exit(const Supervised& supervised) {
  auto exit = exit_record<ServerExit>(supervised);
  exit.index = supervised.who.index;
  exit.server_indices = supervised.who.servers;
  exit.addresses = supervised.who.addresses;
  if (!exit.addresses.empty()) exit.address = exit.addresses.front();
  return exit;
}

Supervisor::WaitOutcome Supervisor::supervise_until(const std::function<bool()>& done,
                                                    Clock::time_point deadline,
                                                    std::chrono::milliseconds check_interval) {
  for (;;) {
    if (phase_ != Phase::kRunning) return WaitOutcome::kStopping;
    if (done()) return WaitOutcome::kDone;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return WaitOutcome::kDeadline;
    step(std::min(deadline, now + check_interval));
  }
}

LaunchResult Supervisor::run() {
  for (;;) {
    const Clock::time_point now = Clock::now();
    if (all_reaped()) {
      if (pump_.all_closed()) break;
      if (!drain_deadline_) drain_deadline_ = now + options_.drain_timeout;
      if (now >= *drain_deadline_) {
        pump_.close_all();
        break;
      }
    }
    step(now + 10 * options_.tick);
  }
  // A signal that arrived after the last process exited still decides the exit code.
  if (options_.signals != nullptr) {
    for (int signal : options_.signals->take_signals()) {
      if (received_signal_ == 0) received_signal_ = signal;
    }
  }
  return collect();
}

LaunchResult Supervisor::collect() const {
  LaunchResult result;
  std::vector<size_t> servers;  // indices into processes_
  for (size_t i = 0; i < processes_.size(); ++i) {
    const Supervised& supervised = processes_[i];
    GRADWIRE_CHECK(supervised.exit.has_value());
    if (supervised.who.role != ProcessRole::kWorker) {
      servers.push_back(i);
      continue;
    }
    if (first_failed_ == static_cast<int>(i)) {
      result.first_failed_local_rank = static_cast<int>(result.workers.size());
    }
    result.workers.push_back(worker_exit(supervised));
  }
  // A restarted server was started after the others: report them in index order.
  std::stable_sort(servers.begin(), servers.end(), [this](size_t a, size_t b) {
    return processes_[a].who.index < processes_[b].who.index;
  });
  for (size_t i : servers) {
    if (first_failed_ == static_cast<int>(i)) {
      result.first_failed_server = static_cast<int>(result.servers.size());
    }
    result.servers.push_back(server_exit(processes_[i]));
  }
  result.received_signal = received_signal_;
  return result;
}

}  // namespace gradwire::launch::detail
