// Per-iteration timestamps of the reducer and their running averages (DdpStats' timing fields).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "gradwire/ddp/ddp.h"

namespace gradwire::ddp {

class IterationTimer {
 public:
  using Clock = std::chrono::steady_clock;

  void start(double forward_seconds);  // at arm(): a new iteration
  void grad_ready(Clock::time_point t);
  void launched(Clock::time_point t);
  void backward_end(Clock::time_point t);
  // The iteration's gradients are written: add it to the averages.
  void reduced(Clock::time_point t);
  void reset();
  // Fills iterations and the *_s averages of `stats`.
  void fill(DdpStats& stats) const;

 private:
  double forward_s_ = 0;
  std::optional<Clock::time_point> first_ready_, last_ready_, first_launch_, backward_end_;
  int64_t iterations_ = 0;
  double forward_sum_ = 0, backward_sum_ = 0, communication_sum_ = 0, overlapped_sum_ = 0,
         exposed_sum_ = 0;
};

}  // namespace gradwire::ddp
