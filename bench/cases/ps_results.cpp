#include "cases/ps_results.h"

#include <algorithm>
#include <cstdio>

#include "gradwire/common/error.h"
#include "harness/stats.h"

namespace gradwire::bench {

namespace {

double sum(const std::vector<double>& values) {
  double total = 0;
  for (const double v : values) total += v;
  return total;
}

double mean_of(const std::map<std::string, std::vector<double>>& lists, const std::string& name) {
  const auto found = lists.find(name);
  if (found == lists.end() || found->second.empty()) return 0;
  return sum(found->second) / static_cast<double>(found->second.size());
}

}  // namespace

const std::vector<std::string>& ps_phases() {
  static const std::vector<std::string> kPhases = {"forward", "backward", "push_wait",
                                                   "server_apply", "pull_wait"};
  return kPhases;
}

const std::vector<std::string>& ps_all_phases() {
  static const std::vector<std::string> kPhases = {"forward",      "backward",  "push_wait",
                                                   "server_apply", "pull_wait", "comm"};
  return kPhases;
}

const std::vector<std::string>& ps_byte_names() {
  static const std::vector<std::string> kNames = {"pushed", "pulled"};
  return kNames;
}

const StepNames& ps_step_names() {
  static const StepNames kNames{"ps", "iteration"};
  return kNames;
}

std::vector<std::string> recorded_phases(const TrainerResults& result) {
  std::vector<std::string> phases;
  for (const auto& phase : ps_all_phases()) {
    for (const auto& trainer : result.trainers) {
      const auto found = trainer.phase_seconds.find(phase);
      if (found != trainer.phase_seconds.end() && !found->second.empty()) {
        phases.push_back(phase);
        break;
      }
    }
  }
  return phases;
}

std::vector<PassFigures> pass_figures(const TrainerResults& result, int iterations) {
  if (iterations < 1) throw InvalidArgument("a pass needs at least one iteration");
  if (result.trainers.empty()) return {};
  std::size_t measured = result.trainers.front().seconds.size();
  for (const auto& trainer : result.trainers) measured = std::min(measured, trainer.seconds.size());
  const auto per_pass = static_cast<std::size_t>(iterations);
  std::vector<PassFigures> passes;
  for (std::size_t first = 0; first + per_pass <= measured; first += per_pass) {
    PassFigures pass;
    pass.pass = static_cast<int>(passes.size());
    for (const auto& trainer : result.trainers) {
      double elapsed = 0;
      for (std::size_t i = first; i < first + per_pass; ++i) {
        elapsed += trainer.seconds[i];
        pass.images += static_cast<double>(trainer.examples[i]);
      }
      pass.elapsed_s = std::max(pass.elapsed_s, elapsed);
    }
    passes.push_back(pass);
  }
  return passes;
}

std::string pass_line(const PassFigures& pass) {
  char buffer[128];
  std::snprintf(buffer, sizeof buffer,
                "Pass = %d, Elapsed = %.2f, Training performance = %f imgs/s", pass.pass,
                pass.elapsed_s, pass.images_per_second());
  return buffer;
}

ByteRates byte_rates(const TrainerSamples& trainer) {
  ByteRates rates;
  rates.pushed_per_iteration = mean_of(trainer.bytes, "pushed");
  rates.pulled_per_iteration = mean_of(trainer.bytes, "pulled");
  const double seconds = sum(trainer.seconds);
  if (seconds > 0 && !trainer.seconds.empty()) {
    const auto iterations = static_cast<double>(trainer.seconds.size());
    rates.pushed_per_second = rates.pushed_per_iteration * iterations / seconds;
    rates.pulled_per_second = rates.pulled_per_iteration * iterations / seconds;
  }
  return rates;
}

ByteRates total_byte_rates(const TrainerResults& result) {
  ByteRates total;
  for (const auto& trainer : result.trainers) {
    const ByteRates rates = byte_rates(trainer);
    total.pushed_per_iteration += rates.pushed_per_iteration;
    total.pulled_per_iteration += rates.pulled_per_iteration;
    total.pushed_per_second += rates.pushed_per_second;
    total.pulled_per_second += rates.pulled_per_second;
  }
  return total;
}

PsRun pool_ps_runs(const std::vector<PsRun>& runs) {
  PsRun pooled;
  std::vector<TrainerResults> ps, ddp, local;
  for (const auto& run : runs) {
    ps.push_back(run.ps);
    if (run.ddp) ddp.push_back(*run.ddp);
    if (run.local) local.push_back(*run.local);
  }
  pooled.ps = pool_trainer_repeats(ps);
  if (!ddp.empty()) pooled.ddp = pool_trainer_repeats(ddp);
  if (!local.empty()) pooled.local = pool_trainer_repeats(local);
  return pooled;
}

double p50_seconds_ratio(const TrainerResults& ours, const TrainerResults& theirs) {
  const std::vector<double> a = pooled_seconds(ours);
  const std::vector<double> b = pooled_seconds(theirs);
  if (a.empty() || b.empty()) return 0;
  const double their_p50 = percentile(b, 50);
  return their_p50 > 0 ? percentile(a, 50) / their_p50 : 0.0;
}

}  // namespace gradwire::bench
