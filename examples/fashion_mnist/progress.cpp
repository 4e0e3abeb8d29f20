#include "progress.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace fashion_mnist {
namespace {

constexpr int kBarWidth = 30;

std::string minutes_seconds(double seconds) {
  const long total = static_cast<long>(std::max(0.0, seconds) + 0.5);
  char text[32];
  std::snprintf(text, sizeof(text), "%ld:%02ld", total / 60, total % 60);
  return text;
}

}  // namespace

ProgressReport::ProgressReport(bool enabled, bool terminal, int64_t global_batch)
    : enabled_(enabled), terminal_(terminal), global_batch_(global_batch) {}

void ProgressReport::start_epoch(int64_t epoch, int64_t steps, int64_t first_step) {
  epoch_ = epoch;
  steps_ = std::max<int64_t>(1, steps);
  first_step_ = first_step;
  last_step_ = first_step;
  started_ = Clock::now();
  last_print_ = started_;
}

void ProgressReport::step(int64_t step, double loss) {
  last_step_ = step;
  last_loss_ = loss;
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (terminal_) {
    // Redraw at most 10 times a second.
    if (now - last_print_ < std::chrono::milliseconds(100) && step < steps_) return;
  } else {
    const int64_t every = std::max<int64_t>(1, steps_ / 10);
    if (step % every != 0 && step != steps_) return;
  }
  last_print_ = now;
  print(step, loss, /*final_line=*/false);
}

double ProgressReport::finish_epoch() {
  const double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  if (enabled_ && terminal_) {
    print(last_step_, last_loss_, /*final_line=*/true);
  }
  return seconds;
}

void ProgressReport::print(int64_t step, double loss, bool final_line) {
  const double elapsed = std::chrono::duration<double>(Clock::now() - started_).count();
  const int64_t done = step - first_step_;
  const double images_per_second = elapsed > 0 ? done * global_batch_ / elapsed : 0;
  const double eta = done > 0 ? elapsed / done * std::max<int64_t>(0, steps_ - step) : 0;
  const int percent = static_cast<int>(std::min<int64_t>(100, step * 100 / steps_));
  if (terminal_) {
    const int filled = percent * kBarWidth / 100;
    std::string bar(kBarWidth, ' ');
    std::fill(bar.begin(), bar.begin() + filled, '=');
    if (filled < kBarWidth) bar[filled] = '>';
    std::printf("\repoch %lld [%s] %3d%% %lld/%lld loss %.4f %.0f img/s ETA %s\033[K%s",
                static_cast<long long>(epoch_), bar.c_str(), percent, static_cast<long long>(step),
                static_cast<long long>(steps_), loss, images_per_second,
                minutes_seconds(eta).c_str(), final_line ? "\n" : "");
  } else {
    std::printf("epoch %lld step %lld/%lld loss %.4f %.0f img/s ETA %s\n",
                static_cast<long long>(epoch_), static_cast<long long>(step),
                static_cast<long long>(steps_), loss, images_per_second,
                minutes_seconds(eta).c_str());
  }
  std::fflush(stdout);
}

}  // namespace fashion_mnist
