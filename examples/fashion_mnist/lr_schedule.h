// Learning-rate schedules of the Fashion-MNIST job, the ones a PyTorch user knows:
//   constant  base_lr throughout
//   cosine    CosineAnnealingLR stepped every optimizer step, T_max = all steps of the job,
//             eta_min 0: base_lr * (1 + cos(pi * t / T)) / 2 for step t = 0 .. T-1
//   step      StepLR: base_lr * gamma^(epoch / step_epochs), changing at epoch boundaries
// The rate is a pure function of the schedule and the global step, so a resumed job that restores
// the schedule (checkpoint.h) and its global step continues with exactly the same rates.
//
// Pure functions; thread safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fashion_mnist {

enum class LrScheduleKind { kConstant = 0, kCosine = 1, kStep = 2 };

// "constant", "cosine" or "step".
const char* to_string(LrScheduleKind kind);
// The kind named `text`; nullopt for anything else.
std::optional<LrScheduleKind> parse_lr_schedule(std::string_view text);

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::kCosine;
  double base_lr = 0.05;
  // Optimizer steps in one epoch and in the whole job (cosine's T_max); both > 0.
  int64_t steps_per_epoch = 1;
  int64_t total_steps = 1;
  // step: epochs between decays (> 0) and the factor of each decay.
  int64_t step_epochs = 4;
  double gamma = 0.1;

  bool operator==(const LrSchedule& other) const;
  bool operator!=(const LrSchedule& other) const { return !(*this == other); }
};

// The learning rate of the step taken after `global_step` steps (0-based). Past total_steps
// cosine stays at 0 (a job resumed with more epochs than it started with; see docs/data.md).
double learning_rate(const LrSchedule& schedule, int64_t global_step);

// One line for logs: "cosine lr 0.05 over 9370 steps", "step lr 0.05 x0.1 every 4 epochs".
std::string describe(const LrSchedule& schedule);

}  // namespace fashion_mnist
