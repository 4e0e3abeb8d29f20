#include "iteration_timer.h"

#include <algorithm>

namespace gradwire::ddp {
namespace {

double seconds(IterationTimer::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

void IterationTimer::start(double forward_seconds) {
  forward_s_ = forward_seconds;
  first_ready_.reset();
  last_ready_.reset();
  first_launch_.reset();
  backward_end_.reset();
}

void IterationTimer::grad_ready(Clock::time_point t) {
  if (!first_ready_) first_ready_ = t;
  last_ready_ = t;
}

void IterationTimer::launched(Clock::time_point t) {
  if (!first_launch_) first_launch_ = t;
}

void IterationTimer::backward_end(Clock::time_point t) { backward_end_ = t; }

void IterationTimer::reduced(Clock::time_point t) {
  Clock::time_point end_of_backward = backward_end_.value_or(t);
  Clock::time_point last_ready = last_ready_.value_or(end_of_backward);
  Clock::time_point first_ready = first_ready_.value_or(last_ready);
  Clock::time_point first_launch = first_launch_.value_or(t);
  ++iterations_;
  forward_sum_ += forward_s_;
  backward_sum_ += seconds(last_ready - first_ready);
  communication_sum_ += seconds(t - first_launch);
  overlapped_sum_ += std::max(0.0, seconds(last_ready - first_launch));
  exposed_sum_ += seconds(t - end_of_backward);
}

void IterationTimer::reset() { *this = IterationTimer(); }

void IterationTimer::fill(DdpStats& stats) const {
  stats.iterations = iterations_;
  double n = iterations_ > 0 ? static_cast<double>(iterations_) : 1.0;
  stats.forward_s = forward_sum_ / n;
  stats.backward_s = backward_sum_ / n;
  stats.communication_s = communication_sum_ / n;
  stats.overlapped_s = overlapped_sum_ / n;
  stats.exposed_s = exposed_sum_ / n;
}

}  // namespace gradwire::ddp
