// LaunchResult: the exit code and the human-readable summary of a launch.
#include <signal.h>

#include <cstring>
#include <sstream>

#include "gradwire/launch/launcher.h"

namespace gradwire::launch {
namespace {

std::string signal_name(int signal) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbreviation = ::sigabbrev_np(signal)) return std::string("SIG") + abbreviation;
#endif
  return "signal " + std::to_string(signal);
}

// "signal 9 (SIGKILL)"
std::string describe_signal(int signal) {
  return "signal " + std::to_string(signal) + " (" + signal_name(signal) + ")";
}

std::string describe_worker(const WorkerExit& worker) {
  return "rank " + std::to_string(worker.rank) + " (local " + std::to_string(worker.local_rank) +
         ", pid " + std::to_string(worker.pid) + ")";
}

std::string describe_end(const WorkerExit& worker) {
  if (worker.signal != 0) return "killed by " + describe_signal(worker.signal);
  return "exited with code " + std::to_string(worker.exit_code);
}

int code_of(const WorkerExit& worker) {
  return worker.signal != 0 ? 128 + worker.signal : worker.exit_code;
}

}  // namespace

int LaunchResult::exit_code() const {
  if (first_failed_local_rank >= 0 &&
      static_cast<size_t>(first_failed_local_rank) < workers.size()) {
    return code_of(workers[first_failed_local_rank]);
  }
  for (const WorkerExit& worker : workers) {
    if (worker.failed() && !worker.stopped_by_launcher) return code_of(worker);
  }
  if (received_signal != 0) return 128 + received_signal;
  for (const WorkerExit& worker : workers) {
    if (worker.failed()) return code_of(worker);
  }
  return 0;
}

std::string LaunchResult::summary() const {
  std::ostringstream out;
  for (const WorkerExit& worker : workers) {
    if (worker.failed() && !worker.stopped_by_launcher) {
      out << "gradwire-run: " << describe_worker(worker) << " " << describe_end(worker) << "\n";
    }
  }
  if (received_signal != 0) {
    out << "gradwire-run: received " << signal_name(received_signal)
        << " and forwarded it to the workers\n";
  }
  std::string reason;
  if (first_failed_local_rank >= 0 &&
      static_cast<size_t>(first_failed_local_rank) < workers.size()) {
    reason = "after rank " + std::to_string(workers[first_failed_local_rank].rank) + " failed";
  } else if (received_signal != 0) {
    reason = "after receiving " + signal_name(received_signal);
  } else {
    reason = "after a failure";
  }
  for (const WorkerExit& worker : workers) {
    if (worker.stopped_by_launcher) {
      out << "gradwire-run: " << describe_worker(worker) << " was stopped by gradwire-run "
          << reason << " (" << describe_end(worker) << ")\n";
    }
  }
  return out.str();
}

}  // namespace gradwire::launch
