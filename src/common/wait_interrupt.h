// Note [interrupted waits]: a long wait on one thread (a sync parameter-server step waiting for the
// other trainers) can be ended by a check that the same thread installed around it, without the
// waiting layer knowing who installed it. elastic::run installs one around the training function
// that throws PeerLostError once a member of the generation is gone (its exit marked by its
// launcher, or its launcher silent), so a survivor waiting in Client::step() for a dead trainer
// goes back to its commit within a fraction of a second instead of at the step timeout. Waits
// call check_wait_interrupt() every kWaitInterruptSlice while one is installed; what it throws
// ends the wait (the waiter cancels what it waited for, then rethrows). Internal to gradwire.
#pragma once

#include <chrono>
#include <functional>

namespace gradwire::detail {

inline constexpr std::chrono::milliseconds kWaitInterruptSlice{200};

// Installs `check` for this thread while it lives (nested ones: the innermost). Not movable.
class WaitInterrupt {
 public:
  explicit WaitInterrupt(std::function<void()> check);
  ~WaitInterrupt();
  WaitInterrupt(const WaitInterrupt&) = delete;
  WaitInterrupt& operator=(const WaitInterrupt&) = delete;

 private:
  friend bool wait_interrupt_installed();
  friend void check_wait_interrupt();
  std::function<void()> check_;
  WaitInterrupt* outer_;
};

// Whether a check is installed on this thread (a wait then waits in slices).
bool wait_interrupt_installed();
// Calls this thread's innermost check, if any; what it throws passes through.
void check_wait_interrupt();

}  // namespace gradwire::detail
