#include "process.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core_binding.h"
#include "gradwire/common/error.h"
#include "gradwire/launch/launcher.h"

namespace gradwire::launch::detail {
namespace {

// What the child reports through the exec-error pipe when it cannot reach exec.
enum class ChildStage : int { kSetup = 1, kExec = 2, kBindCpus = 3 };
struct ChildFailure {
  ChildStage stage;
  int error_number;
};

// Exit status of a child that failed before or in exec (shell convention).
constexpr int kExecFailedExit = 127;
// Reported for a worker reaped by someone else, whose status we cannot know.
constexpr int kUnknownStatusExit = 255;

// Pipes and /dev/null must not land on fds 0-2 (possible when the launcher runs with a closed
// stdio): the child dup2()s them onto 0-2 and would clobber one with another.
UniqueFd above_stdio(UniqueFd fd) {
  if (fd.get() > 2) return fd;
  int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (moved < 0) throw Error("gradwire-run: fcntl(F_DUPFD_CLOEXEC) failed: " + errno_text(errno));
  return UniqueFd(moved);
}

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw Error("gradwire-run: pipe2 failed: " + errno_text(errno) +
                " (too many open files? raise ulimit -n)");
  }
  Pipe pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
  pipe.read = above_stdio(std::move(pipe.read));
  pipe.write = above_stdio(std::move(pipe.write));
  return pipe;
}

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    throw Error("gradwire-run: fcntl(O_NONBLOCK) failed: " + errno_text(errno));
  }
}

// Everything the child needs, prepared before fork(): after fork only async-signal-safe calls.
struct ChildPlan {
  char* const* argv;
  char* const* envp;
  int stdin_fd;
  int stdout_fd;
  int stderr_fd;
  int failure_fd;  // close-on-exec; receives a ChildFailure when exec is not reached
  pid_t parent_pid;
  int max_fd;  // fallback bound for marking descriptors close-on-exec
  const sigset_t* signal_mask;
  const cpu_set_t* cpus;  // nullptr: keep the launcher's CPU affinity
  size_t cpus_bytes;
};

[[noreturn]] void child_fail(const ChildPlan& plan, ChildStage stage) {
  ChildFailure failure{stage, errno};
  ssize_t ignored = ::write(plan.failure_fd, &failure, sizeof(failure));
  (void)ignored;
  ::_exit(kExecFailedExit);
}

[[noreturn]] void run_child(const ChildPlan& plan) {
  // All signals are blocked here (the parent blocked them around fork()).
  ::setpgid(0, 0);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fail(plan, ChildStage::kSetup);
  // The launcher died between fork() and prctl(): nothing would ever kill us.
  if (::getppid() != plan.parent_pid) ::_exit(kExecFailedExit);
  if (plan.cpus != nullptr && ::sched_setaffinity(0, plan.cpus_bytes, plan.cpus) != 0) {
    child_fail(plan, ChildStage::kBindCpus);
  }

  if (::dup2(plan.stdin_fd, 0) < 0 || ::dup2(plan.stdout_fd, 1) < 0 ||
      ::dup2(plan.stderr_fd, 2) < 0) {
    child_fail(plan, ChildStage::kSetup);
  }
  // No descriptor of the launcher (other workers' pipes, the caller's files) leaks into the
  // program, as with Python's subprocess close_fds=True.
#ifdef CLOSE_RANGE_CLOEXEC
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
#endif
  {
    for (int fd = 3; fd < plan.max_fd; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  // Handlers inherited from the launcher (e.g. signal forwarding) must not run in the child
  // before exec resets them; ignored signals stay ignored, as exec would keep them.
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) != 0) continue;
    if (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN) continue;
    struct sigaction reset {};
    reset.sa_handler = SIG_DFL;
    ::sigaction(sig, &reset, nullptr);
  }
  ::sigprocmask(SIG_SETMASK, plan.signal_mask, nullptr);

  ::execvpe(plan.argv[0], plan.argv, plan.envp);
  child_fail(plan, ChildStage::kExec);
}

ProcessExit decode_status(int status) {
  ProcessExit exit;
  if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    exit.exit_code = WEXITSTATUS(status);
  }
  return exit;
}

}  // namespace

std::string signal_name(int signal) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbreviation = ::sigabbrev_np(signal)) return std::string("SIG") + abbreviation;
#endif
  return "signal " + std::to_string(signal);
}

std::string describe_exit(const ProcessExit& exit) {
  if (exit.signal != 0) {
    return "killed by signal " + std::to_string(exit.signal) + " (" + signal_name(exit.signal) +
           ")";
  }
  return "exited with code " + std::to_string(exit.exit_code);
}

int exit_status_code(const ProcessExit& exit) {
  return exit.signal != 0 ? 128 + exit.signal : exit.exit_code;
}

WorkerProcess::WorkerProcess(pid_t pid) : pid_(pid) {
#ifdef SYS_pidfd_open
  exit_fd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));  // close-on-exec
#endif
}

WorkerProcess::WorkerProcess(WorkerProcess&& other) noexcept
    : pid_(other.pid_),
      reaped_(std::exchange(other.reaped_, true)),
      exit_fd_(std::move(other.exit_fd_)) {}

WorkerProcess::~WorkerProcess() {
  if (!reaped_) kill_and_reap();
}

void WorkerProcess::signal_group(int signal) {
  if (reaped_) return;
  // Normally the worker leads group pid_. If it moved itself elsewhere, signal it directly and
  // still signal the group it left behind.
  if (::getpgid(pid_) != pid_) ::kill(pid_, signal);
  ::killpg(pid_, signal);
}

std::optional<ProcessExit> WorkerProcess::try_reap() {
  if (reaped_) return std::nullopt;
  siginfo_t info{};
  // WNOWAIT keeps the zombie, so pid_ (and the group id) cannot be reused while we kill the
  // group's leftovers (background children the worker did not wait for).
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno != ECHILD) return std::nullopt;  // EINTR: try again next time
    // Someone else reaped it (SIGCHLD ignored, or a waitpid(-1) elsewhere): status unknown.
    reaped_ = true;
    return ProcessExit{kUnknownStatusExit, 0};
  }
  if (info.si_pid == 0) return std::nullopt;
  ::killpg(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  return decode_status(status);
}

ProcessExit WorkerProcess::kill_and_reap() {
  if (reaped_) return {};
  signal_group(SIGKILL);
  int status = 0;
  pid_t result;
  while ((result = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  if (result < 0) return {};
  ::killpg(pid_, SIGKILL);  // pid_ may be reused from here on; best effort for stragglers
  return decode_status(status);
}

SpawnedWorker spawn_worker(const SpawnRequest& request) {
  GRADWIRE_CHECK(!request.argv.empty());
  const std::string& program = request.argv.front();

  std::vector<std::string> env_entries;
  env_entries.reserve(request.env.size());
  for (const auto& [name, value] : request.env) {
    std::string entry = name;
    entry += '=';
    entry += value;
    env_entries.push_back(std::move(entry));
  }
  std::vector<char*> argv;
  argv.reserve(request.argv.size() + 1);
  for (const auto& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  envp.reserve(env_entries.size() + 1);
  for (const auto& entry : env_entries) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);

  UniqueFd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!dev_null.valid()) throw Error("gradwire-run: cannot open /dev/null: " + errno_text(errno));
  dev_null = above_stdio(std::move(dev_null));
  Pipe out = make_pipe();
  Pipe err = make_pipe();
  Pipe failure = make_pipe();
  const CpuSet cpus(request.cpus);

  const long open_max = ::sysconf(_SC_OPEN_MAX);
  ChildPlan plan{argv.data(),          envp.data(),
                 dev_null.get(),       out.write.get(),
                 err.write.get(),      failure.write.get(),
                 ::getpid(),           static_cast<int>(std::clamp(open_max, 1024L, 65536L)),
                 &request.signal_mask, cpus.data(),
                 cpus.size_bytes()};

  sigset_t all_signals;
  sigset_t saved_mask;
  sigfillset(&all_signals);
  ::pthread_sigmask(SIG_SETMASK, &all_signals, &saved_mask);
  const pid_t pid = ::fork();
  if (pid == 0) run_child(plan);
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  if (pid < 0) {
    throw Error("gradwire-run: fork failed: " + errno_text(fork_errno) +
                " (out of memory or process limit reached?)");
  }

  WorkerProcess process(pid);  // from here on, an exception kills and reaps the child
  ::setpgid(pid, pid);         // also in the parent, so signal_group() works at once
  out.write.reset();
  err.write.reset();
  failure.write.reset();

  ChildFailure child_failure{};
  ssize_t got;
  while ((got = ::read(failure.read.get(), &child_failure, sizeof(child_failure))) < 0 &&
         errno == EINTR) {
  }
  if (got == static_cast<ssize_t>(sizeof(child_failure))) {
    process.kill_and_reap();
    const std::string reason = errno_text(child_failure.error_number);
    if (child_failure.stage == ChildStage::kExec) {
      throw ProgramNotExecutable("could not execute " + program + ": " + reason +
                                     " (check the program name, PATH and the file's permissions)",
                                 child_failure.error_number);
    }
    if (child_failure.stage == ChildStage::kBindCpus) {
      throw Error("gradwire-run: could not bind the worker running " + program + " to CPUs " +
                  cpu_list_text(request.cpus) + " (sched_setaffinity): " + reason +
                  "; the CPUs may no longer be allowed for this process (a changed cpuset?): "
                  "start again, or without binding (--bind-cores / LaunchOptions::bind_cores)");
    }
    throw Error("gradwire-run: could not set up the worker process for " + program + ": " + reason);
  }

  set_nonblocking(out.read.get());
  set_nonblocking(err.read.get());
  return SpawnedWorker{std::move(process), std::move(out.read), std::move(err.read)};
}

}  // namespace gradwire::launch::detail
