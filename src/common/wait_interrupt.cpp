#include "common/wait_interrupt.h"

namespace gradwire::detail {
namespace {
thread_local WaitInterrupt* innermost = nullptr;
}  // namespace

WaitInterrupt::WaitInterrupt(std::function<void()> check)
    : check_(std::move(check)), outer_(innermost) {
  innermost = this;
}

WaitInterrupt::~WaitInterrupt() { innermost = outer_; }

bool wait_interrupt_installed() { return innermost != nullptr && innermost->check_; }

void check_wait_interrupt() {
  if (wait_interrupt_installed()) innermost->check_();
}

}  // namespace gradwire::detail
