#include "signal_forwarding.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "gradwire/common/error.h"

// Note [signal forwarding]
// Signal dispositions belong to the whole process, so this file holds gradwire's only mutable
// globals: the write end of a self-pipe and an "installed" flag. The handler does the one
// async-signal-safe thing possible, writing the signal number into the pipe; the launcher's poll()
// loop reads it and forwards the signal to the workers' process groups.
//
// The pipe is created once and never closed: a handler already running on another thread while
// the handlers are being restored could otherwise write into a closed (or reused) descriptor.
// Stale bytes are drained when the next instance is installed. Workers are not affected: their
// pipe ends are close-on-exec and the child resets inherited handlers before exec (process.cpp).

namespace gradwire::launch::detail {
namespace {

std::atomic<int> g_signal_write_fd{-1};  // -1 while no instance is alive
std::atomic<bool> g_installed{false};

static_assert(std::atomic<int>::is_always_lock_free, "the handler needs a lock-free atomic");

struct SelfPipe {
  int read_fd = -1;
  int write_fd = -1;
};

const SelfPipe& self_pipe() {
  static const SelfPipe pipe = [] {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw Error(std::string("gradwire-run: cannot create the signal pipe: ") +
                  std::strerror(errno));
    }
    return SelfPipe{fds[0], fds[1]};
  }();
  return pipe;
}

extern "C" void forward_signal_handler(int signal) {
  const int saved_errno = errno;
  const int fd = g_signal_write_fd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    const unsigned char byte = static_cast<unsigned char>(signal);
    ssize_t ignored = ::write(fd, &byte, 1);  // a full pipe drops it: plenty are queued already
    (void)ignored;
  }
  errno = saved_errno;
}

}  // namespace

const std::vector<int>& SignalForwarding::forwarded_signals() {
  static const std::vector<int> signals{SIGINT, SIGTERM, SIGHUP};
  return signals;
}

SignalForwarding::SignalForwarding() {
  bool expected = false;
  if (!g_installed.compare_exchange_strong(expected, true)) {
    throw Error(
        "gradwire-run: another run_workers call is already forwarding signals in this process; "
        "set LaunchOptions::forward_signals = false for concurrent launches");
  }
  try {
    const SelfPipe& pipe = self_pipe();
    take_signals();  // stale bytes from an earlier instance
    g_signal_write_fd.store(pipe.write_fd);
    for (int signal : forwarded_signals()) {
      struct sigaction previous {};
      if (::sigaction(signal, nullptr, &previous) != 0) continue;
      if (previous.sa_handler == SIG_IGN) continue;  // nohup / background job: stay ignored
      struct sigaction handler {};
      handler.sa_handler = forward_signal_handler;
      handler.sa_flags = SA_RESTART;
      sigemptyset(&handler.sa_mask);
      if (::sigaction(signal, &handler, nullptr) != 0) {
        throw Error(std::string("gradwire-run: cannot install a signal handler: ") +
                    std::strerror(errno));
      }
      saved_.push_back({signal, previous});
    }
  } catch (...) {
    restore_handlers();
    throw;
  }
}

SignalForwarding::~SignalForwarding() { restore_handlers(); }

void SignalForwarding::restore_handlers() {
  for (const SavedHandler& saved : saved_) ::sigaction(saved.signal, &saved.previous, nullptr);
  saved_.clear();
  g_signal_write_fd.store(-1);
  g_installed.store(false);
}

int SignalForwarding::fd() const { return self_pipe().read_fd; }

std::vector<int> SignalForwarding::take_signals() {
  std::vector<int> signals;
  unsigned char buffer[64];
  for (;;) {
    ssize_t got = ::read(self_pipe().read_fd, buffer, sizeof(buffer));
    if (got > 0) {
      signals.insert(signals.end(), buffer, buffer + got);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    return signals;
  }
}

}  // namespace gradwire::launch::detail
