#include "supervisor.h"

#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>

#include "gradwire/common/error.h"

namespace gradwire::launch::detail {

Supervisor::Supervisor(std::vector<SupervisedWorker> workers, OutputPump& pump,
                       SupervisorOptions options)
    : workers_(std::move(workers)), exits_(workers_.size()), pump_(pump), options_(options) {}

void Supervisor::transition(Phase next) {
  const bool allowed = (phase_ == Phase::kRunning && next != Phase::kRunning) ||
                       (phase_ == Phase::kStopping && next == Phase::kKilling);
  GRADWIRE_CHECK(allowed);
  phase_ = next;
}

bool Supervisor::all_reaped() const {
  return std::all_of(exits_.begin(), exits_.end(),
                     [](const auto& exit) { return exit.has_value(); });
}

void Supervisor::stop_all(int signal) {
  for (SupervisedWorker& worker : workers_) worker.process.signal_group(signal);
}

void Supervisor::handle_signals(const std::vector<int>& signals) {
  for (int signal : signals) {
    if (received_signal_ == 0) received_signal_ = signal;
    if (phase_ == Phase::kRunning) {
      // Forward the signal itself: the workers may shut down gracefully on SIGINT/SIGTERM.
      stop_all(signal);
      transition(Phase::kStopping);
      kill_deadline_ = Clock::now() + options_.grace_period;
    } else if (phase_ == Phase::kStopping) {
      // A second signal (Ctrl-C twice): do not wait for the grace period.
      stop_all(SIGKILL);
      transition(Phase::kKilling);
    }
  }
}

void Supervisor::reap_exited() {
  // Workers reaped in this pass exited before any stop signal sent below.
  const bool stop_already_sent = phase_ != Phase::kRunning;
  int newly_failed = -1;
  for (size_t local = 0; local < workers_.size(); ++local) {
    if (exits_[local]) continue;
    SupervisedWorker& worker = workers_[local];
    std::optional<ProcessExit> ended = worker.process.try_reap();
    if (!ended) continue;
    WorkerExit exit;
    exit.rank = worker.rank;
    exit.local_rank = worker.local_rank;
    exit.pid = worker.process.pid();
    exit.exit_code = ended->exit_code;
    exit.signal = ended->signal;
    exit.stopped_by_launcher = stop_already_sent;
    if (!stop_already_sent && exit.failed() && newly_failed < 0) {
      newly_failed = static_cast<int>(local);
    }
    exits_[local] = exit;
  }
  if (newly_failed >= 0 && phase_ == Phase::kRunning) {
    first_failed_local_rank_ = newly_failed;
    stop_all(SIGTERM);
    transition(Phase::kStopping);
    kill_deadline_ = Clock::now() + options_.grace_period;
  }
}

int Supervisor::poll_timeout_ms(Clock::time_point now) const {
  const bool exits_wake_us = std::all_of(workers_.begin(), workers_.end(), [](const auto& worker) {
    return worker.process.reaped() || worker.process.exit_fd() >= 0;
  });
  std::chrono::milliseconds timeout = exits_wake_us ? 10 * options_.tick : options_.tick;
  if (phase_ == Phase::kStopping) {
    timeout = std::min(timeout, std::chrono::ceil<std::chrono::milliseconds>(kill_deadline_ - now));
  }
  if (drain_deadline_) {
    timeout =
        std::min(timeout, std::chrono::ceil<std::chrono::milliseconds>(*drain_deadline_ - now));
  }
  return static_cast<int>(std::max<long long>(0, timeout.count()));
}

void Supervisor::wait_for_events(int timeout_ms) {
  // Layout: [output pipes...][worker exit fds...][signal fd]. Exit fds only wake the loop;
  // reap_exited() runs after every wake-up anyway.
  std::vector<pollfd> fds;
  for (int fd : pump_.fds()) fds.push_back({fd, POLLIN, 0});
  const size_t pipe_count = fds.size();
  for (const SupervisedWorker& worker : workers_) {
    if (worker.process.exit_fd() >= 0) fds.push_back({worker.process.exit_fd(), POLLIN, 0});
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

LaunchResult Supervisor::run() {
  for (;;) {
    Clock::time_point now = Clock::now();
    if (all_reaped()) {
      if (pump_.all_closed()) break;
      if (!drain_deadline_) drain_deadline_ = now + options_.drain_timeout;
      if (now >= *drain_deadline_) {
        pump_.close_all();
        break;
      }
    }
    wait_for_events(poll_timeout_ms(now));
    reap_exited();
    if (phase_ == Phase::kStopping && Clock::now() >= kill_deadline_) {
      stop_all(SIGKILL);
      transition(Phase::kKilling);
    }
  }
  // A signal that arrived after the last worker exited still decides the exit code.
  if (options_.signals != nullptr) {
    for (int signal : options_.signals->take_signals()) {
      if (received_signal_ == 0) received_signal_ = signal;
    }
  }

  LaunchResult result;
  for (const auto& exit : exits_) result.workers.push_back(*exit);
  result.first_failed_local_rank = first_failed_local_rank_;
  result.received_signal = received_signal_;
  return result;
}

}  // namespace gradwire::launch::detail
