#include "common/wait_interrupt.h"

namespace gradwire::detail {
namespace {
thread_local WaitInterrupt* innermost = nullptr;
thread_local const std::function<void()>* innermost_check = nullptr;
}  // namespace

WaitInterrupt::WaitInterrupt(std::function<void()> check)
    : check_(std::move(check)), outer_(innermost) {
  innermost = this;
  innermost_check = &check_;
}

WaitInterrupt::~WaitInterrupt() {
  innermost = outer_;
  innermost_check = outer_ == nullptr ? nullptr : &outer_->check_;
}

bool wait_interrupt_installed() { return innermost_check != nullptr && *innermost_check; }

void check_wait_interrupt() {
  if (wait_interrupt_installed()) (*innermost_check)();
}

}  // namespace gradwire::detail
