#include "lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gradwire/common/error.h"

namespace fashion_mnist {

const char* to_string(LrScheduleKind kind) {
  switch (kind) {
    case LrScheduleKind::kConstant:
      return "constant";
    case LrScheduleKind::kCosine:
      return "cosine";
    case LrScheduleKind::kStep:
      return "step";
  }
  return "unknown";
}

std::optional<LrScheduleKind> parse_lr_schedule(std::string_view text) {
  for (LrScheduleKind kind :
       {LrScheduleKind::kConstant, LrScheduleKind::kCosine, LrScheduleKind::kStep}) {
    if (text == to_string(kind)) return kind;
  }
  return std::nullopt;
}

bool LrSchedule::operator==(const LrSchedule& other) const {
  return kind == other.kind && base_lr == other.base_lr &&
         steps_per_epoch == other.steps_per_epoch && total_steps == other.total_steps &&
         step_epochs == other.step_epochs && gamma == other.gamma;
}

double learning_rate(const LrSchedule& schedule, int64_t global_step) {
  GRADWIRE_CHECK(schedule.steps_per_epoch > 0 && schedule.total_steps > 0 &&
                 schedule.step_epochs > 0 && global_step >= 0);
  switch (schedule.kind) {
    case LrScheduleKind::kConstant:
      return schedule.base_lr;
    case LrScheduleKind::kCosine: {
      const double t = static_cast<double>(std::min(global_step, schedule.total_steps));
      const double progress = t / static_cast<double>(schedule.total_steps);
      return schedule.base_lr * 0.5 * (1.0 + std::cos(M_PI * progress));
    }
    case LrScheduleKind::kStep: {
      const int64_t epoch = global_step / schedule.steps_per_epoch;
      return schedule.base_lr *
             std::pow(schedule.gamma, static_cast<double>(epoch / schedule.step_epochs));
    }
  }
  return schedule.base_lr;
}

std::string describe(const LrSchedule& schedule) {
  char text[128];
  switch (schedule.kind) {
    case LrScheduleKind::kConstant:
      std::snprintf(text, sizeof(text), "constant lr %g", schedule.base_lr);
      break;
    case LrScheduleKind::kCosine:
      std::snprintf(text, sizeof(text), "cosine lr %g to 0 over %lld steps", schedule.base_lr,
                    static_cast<long long>(schedule.total_steps));
      break;
    case LrScheduleKind::kStep:
      std::snprintf(text, sizeof(text), "step lr %g x%g every %lld epochs", schedule.base_lr,
                    schedule.gamma, static_cast<long long>(schedule.step_epochs));
      break;
  }
  return text;
}

}  // namespace fashion_mnist
