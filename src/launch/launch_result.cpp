// LaunchResult: the exit code and the human-readable summary of a launch.
#include <algorithm>
#include <sstream>

#include "gradwire/launch/launcher.h"
#include "process.h"
#include "server_processes.h"

namespace gradwire::launch {
namespace {

using detail::describe_exit;
using detail::describe_server_exit;
using detail::hosted_servers;
using detail::ProcessExit;
using detail::signal_name;

template <typename Exit>
ProcessExit ended(const Exit& exit) {
  return ProcessExit{exit.exit_code, exit.signal};
}

std::string describe_worker(const WorkerExit& worker) {
  return "rank " + std::to_string(worker.rank) + " (local " + std::to_string(worker.local_rank) +
         ", pid " + std::to_string(worker.pid) + ")";
}

int code_of(const WorkerExit& worker) { return detail::exit_status_code(ended(worker)); }

// A server that exited 0 on its own still failed the launch.
int code_of(const ServerExit& server) {
  const int code = detail::exit_status_code(ended(server));
  return code != 0 ? code : 1;
}

template <typename Exit>
const Exit* at(const std::vector<Exit>& exits, int index) {
  return index >= 0 && static_cast<size_t>(index) < exits.size() ? &exits[index] : nullptr;
}

}  // namespace

int LaunchResult::exit_code() const {
  if (elastic && received_signal == 0) {
    // The job finished when a worker finished; the failures on the way were tolerated.
    for (const WorkerExit& worker : workers) {
      if (!worker.failed()) return 0;
    }
  }
  if (const WorkerExit* first = at(workers, first_failed_local_rank)) return code_of(*first);
  for (const WorkerExit& worker : workers) {
    if (worker.failed() && !worker.stopped_by_launcher) return code_of(worker);
  }
  if (const ServerExit* first = at(servers, first_failed_server)) return code_of(*first);
  for (const ServerExit& server : servers) {
    if (server.failed()) return code_of(server);
  }
  if (received_signal != 0) return 128 + received_signal;
  for (const WorkerExit& worker : workers) {
    if (worker.failed()) return code_of(worker);
  }
  return 0;
}

std::string LaunchResult::summary() const {
  std::ostringstream attempts;
  for (size_t i = 0; i < restarted_attempts.size(); ++i) {
    const RestartedAttempt& attempt = restarted_attempts[i];
    attempts << "gradwire-run: attempt " << i + 1 << " (MASTER_PORT " << attempt.master_port
             << ") failed: ";
    std::string also;
    for (const ServerExit& server : attempt.also_failed_servers) {
      also += "; " + describe_server_exit(server) + " " + describe_exit(ended(server)) + " too";
    }
    // Servers, not processes: a process hosting several servers restarted all of them.
    size_t dead = attempt.failed_server ? hosted_servers(*attempt.failed_server).size() : 0;
    for (const ServerExit& server : attempt.also_failed_servers) {
      dead += hosted_servers(server).size();
    }
    const std::string restarted = dead == 1 ? "; the server and the workers were restarted\n"
                                            : "; the servers and the workers were restarted\n";
    if (attempt.failed_server) {
      attempts << describe_server_exit(*attempt.failed_server) << " "
               << describe_exit(ended(*attempt.failed_server)) << " while the trainers ran" << also
               << restarted;
      continue;
    }
    if (const WorkerExit* first = at(attempt.workers, attempt.first_failed_local_rank)) {
      attempts << describe_worker(*first) << " " << describe_exit(ended(*first));
    } else {
      attempts << "a worker failed";
    }
    attempts << also << (dead == 0 ? "; the workers were restarted\n" : restarted);
  }
  if (!restarted_attempts.empty()) {
    attempts << "gradwire-run: attempt " << restarted_attempts.size() + 1 << " (MASTER_PORT "
             << master_port << ", the last) " << (exit_code() == 0 ? "succeeded" : "failed")
             << "\n";
  }
  return attempts.str() + last_attempt_summary();
}

std::string LaunchResult::last_attempt_summary() const {
  std::ostringstream out;
  for (const WorkerExit& worker : tolerated_failures) {
    out << "gradwire-run: " << describe_worker(worker) << " " << describe_exit(ended(worker))
        << "; the others went on (elastic)\n";
  }
  for (const WorkerExit& worker : workers) {
    const bool tolerated =
        std::any_of(tolerated_failures.begin(), tolerated_failures.end(),
                    [&](const WorkerExit& failure) { return failure.pid == worker.pid; });
    if (worker.failed() && !worker.stopped_by_launcher && !tolerated) {
      out << "gradwire-run: " << describe_worker(worker) << " " << describe_exit(ended(worker))
          << "\n";
    }
  }
  for (const ServerExit& server : servers) {
    if (server.failed()) {
      out << "gradwire-run: " << describe_server_exit(server) << " " << describe_exit(ended(server))
          << " while the trainers ran\n";
    }
  }
  if (received_signal != 0) {
    out << "gradwire-run: received " << signal_name(received_signal)
        << " and forwarded it to the workers\n";
  }
  std::string reason;
  if (const WorkerExit* first = at(workers, first_failed_local_rank)) {
    reason = "after rank " + std::to_string(first->rank) + " failed";
  } else if (const ServerExit* first = at(servers, first_failed_server)) {
    reason =
        "after " + detail::server_process_name(first->index, hosted_servers(*first)) + " failed";
  } else if (received_signal != 0) {
    reason = "after receiving " + signal_name(received_signal);
  } else {
    reason = "after a failure";
  }
  for (const WorkerExit& worker : workers) {
    if (worker.stopped_by_launcher) {
      out << "gradwire-run: " << describe_worker(worker) << " was stopped by gradwire-run "
          << reason << " (" << describe_exit(ended(worker)) << ")\n";
    }
  }
  // Servers stopped at the normal end of a successful job are not news.
  if (out.tellp() > 0) {
    for (const ServerExit& server : servers) {
      if (server.stopped_by_launcher) {
        out << "gradwire-run: " << describe_server_exit(server) << " was stopped by gradwire-run "
            << reason << " (" << describe_exit(ended(server)) << ")\n";
      }
    }
  }
  return out.str();
}

}  // namespace gradwire::launch
