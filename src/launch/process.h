// Starting one worker process and owning it until it is reaped (launch-internal).
//
// Each worker runs in its own process group (pgid == pid) so that a stop signal reaches whatever
// it started, with stdin from /dev/null, stdout/stderr on pipes read by the launcher, every other
// inherited descriptor closed on exec, and PR_SET_PDEATHSIG=SIGKILL so it dies with the thread
// that started it. Not thread-safe; one owner.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gradwire/common/files.h"

namespace gradwire::launch::detail {

// How a reaped process ended: exit code, or the signal that killed it (then exit_code is 0).
struct ProcessExit {
  int exit_code = 0;
  int signal = 0;
};

// "SIGTERM" (or "signal 64" where the C library has no name for it).
std::string signal_name(int signal);
// "exited with code 3" or "killed by signal 9 (SIGKILL)".
std::string describe_exit(const ProcessExit& exit);
// The launcher's exit code for a process that ended so: its exit code, or 128 + signal.
int exit_status_code(const ProcessExit& exit);

struct SpawnRequest {
  std::vector<std::string> argv;           // argv[0] is looked up on PATH (execvp rules)
  std::map<std::string, std::string> env;  // the complete environment
  sigset_t signal_mask;                    // the worker's initial signal mask
  // The CPUs the worker may run on (sched_setaffinity before exec); empty: the launcher's mask.
  std::vector<int> cpus;
};

// A started, not yet reaped, worker. Destruction kills its process group with SIGKILL and reaps
// it, so an exception anywhere in the launcher leaves no process behind.
class WorkerProcess {
 public:
  // Takes over child `pid`; opens a pidfd for it when the kernel supports them (Linux >= 5.3).
  explicit WorkerProcess(pid_t pid);
  WorkerProcess(WorkerProcess&& other) noexcept;
  WorkerProcess& operator=(WorkerProcess&& other) = delete;
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;
  ~WorkerProcess();

  pid_t pid() const { return pid_; }
  bool reaped() const { return reaped_; }
  // Readable once the worker has exited (a pidfd); -1 when unsupported or reaped: then poll
  // try_reap() periodically.
  int exit_fd() const { return reaped_ ? -1 : exit_fd_.get(); }

  // Sends `signal` to the worker's process group (or the worker alone if it left its group).
  // No-op once reaped.
  void signal_group(int signal);

  // Non-blocking. When the worker has exited: kills what is left of its process group, reaps it
  // and returns how it ended; nullopt while it runs.
  std::optional<ProcessExit> try_reap();

  // Blocking: SIGKILL to the group, then reap. No-op once reaped.
  ProcessExit kill_and_reap();

 private:
  pid_t pid_;
  bool reaped_ = false;
  UniqueFd exit_fd_;
};

struct SpawnedWorker {
  WorkerProcess process;
  UniqueFd stdout_read;  // non-blocking read ends of the worker's stdout/stderr pipes
  UniqueFd stderr_read;
};

// Forks and execs `request.argv`. Throws ProgramNotExecutable ("could not execute PROGRAM: ...")
// when exec fails, gradwire::Error for other failures (among them a request.cpus the child
// cannot be bound to, naming the CPUs); nothing is left running in any case.
SpawnedWorker spawn_worker(const SpawnRequest& request);

}  // namespace gradwire::launch::detail
