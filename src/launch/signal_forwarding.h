// Catching SIGINT/SIGTERM/SIGHUP while workers run, so the launcher can forward them
// (launch-internal). See Note [signal forwarding] in signal_forwarding.cpp.
#pragma once

#include <signal.h>

#include <vector>

namespace gradwire::launch::detail {

// While alive, SIGINT, SIGTERM and SIGHUP (each unless ignored when constructed) no longer
// terminate the process: they are queued and fd() becomes readable. Destruction restores the
// previous handlers. At most one instance per process; not thread-safe.
class SignalForwarding {
 public:
  // Throws gradwire::Error when another instance is alive or the handlers cannot be installed.
  SignalForwarding();
  ~SignalForwarding();
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

  // Non-blocking descriptor that is readable when signals are queued.
  int fd() const;

  // The signals received since the last call, in arrival order (non-blocking).
  std::vector<int> take_signals();

  // The signals this instance catches.
  static const std::vector<int>& forwarded_signals();

 private:
  void restore_handlers();

  struct SavedHandler {
    int signal;
    struct sigaction previous;
  };
  std::vector<SavedHandler> saved_;  // dispositions to restore
};

}  // namespace gradwire::launch::detail
