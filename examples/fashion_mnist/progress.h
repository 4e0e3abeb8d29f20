// Rank 0's progress report during an epoch: a one-line bar redrawn in place on a terminal
// (`epoch 2 [=====>    ] 48% 225/468 loss 0.3312 5120 img/s ETA 0:09`), or a plain line about
// every tenth of the epoch when stdout is not a terminal (logs, gradwire-run's pipes).
//
// Not thread-safe; writes to stdout and flushes.
#pragma once

#include <chrono>
#include <cstdint>

namespace fashion_mnist {

class ProgressReport {
 public:
  // `enabled` false makes every call a no-op (ranks other than 0). `terminal`: draw the bar.
  ProgressReport(bool enabled, bool terminal, int64_t global_batch);

  // A new epoch of about `steps` steps (the bar's 100%), starting at step `first_step` (> 0 when
  // resumed mid-epoch).
  void start_epoch(int64_t epoch, int64_t steps, int64_t first_step);
  // After step `step` (1-based within the epoch) with this rank's loss.
  void step(int64_t step, double loss);
  // Ends the bar's line; returns the seconds the epoch took (since start_epoch).
  double finish_epoch();

 private:
  using Clock = std::chrono::steady_clock;
  void print(int64_t step, double loss, bool final_line);

  bool enabled_;
  bool terminal_;
  int64_t global_batch_;
  int64_t epoch_ = 0;
  int64_t steps_ = 1;
  int64_t first_step_ = 0;
  int64_t last_step_ = 0;
  double last_loss_ = 0;
  Clock::time_point started_;
  Clock::time_point last_print_;
};

}  // namespace fashion_mnist
