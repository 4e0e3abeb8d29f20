#include "harness/alternation.h"

#include "gradwire/common/timeline.h"
#include "harness/stats.h"
#include "harness/table.h"

namespace gradwire::bench {

AlternationProbe::AlternationProbe() : alternate_ns_(timeline::alternate_ns()) {}

void AlternationProbe::begin() {
  if (active()) start_ns_ = timeline::job_clock_ns();
}

double AlternationProbe::end() const {
  if (!active()) return -1;
  return timeline::recorded_throughout(start_ns_, timeline::job_clock_ns(), alternate_ns_,
                                       kAlternationMarginNs);
}

void AlternatedSteps::add(const std::vector<double>& seconds, const std::vector<double>& recorded) {
  if (seconds.size() != recorded.size()) return;
  for (std::size_t i = 0; i < seconds.size(); ++i) {
    if (recorded[i] == 1) recorded_seconds.push_back(seconds[i]);
    if (recorded[i] == 0) unrecorded_seconds.push_back(seconds[i]);
  }
}

namespace {

// The two groups' p50 seconds and their ratio (comparable steps only).
struct P50s {
  double recorded = 0;
  double unrecorded = 0;
  double ratio() const { return unrecorded > 0 ? recorded / unrecorded : 0.0; }
};

P50s p50s(const AlternatedSteps& steps) {
  return {percentile(steps.recorded_seconds, 50), percentile(steps.unrecorded_seconds, 50)};
}

}  // namespace

nlohmann::json AlternatedSteps::to_json(const std::string& step) const {
  if (!comparable()) return nullptr;
  const P50s p50 = p50s(*this);
  return {{"recorded_" + step + "s", recorded_seconds.size()},
          {"unrecorded_" + step + "s", unrecorded_seconds.size()},
          {"recorded_p50_sec_per_" + step, p50.recorded},
          {"unrecorded_p50_sec_per_" + step, p50.unrecorded},
          {"p50_ratio", p50.ratio()}};
}

std::string AlternatedSteps::line(const std::string& step) const {
  if (!comparable()) return "";
  const P50s p50 = p50s(*this);
  return "the timeline alternating (GRADWIRE_TIMELINE_ALTERNATE_MS): p50 " +
         format_fixed(p50.recorded * 1e3, 3) + " ms per " + step + " recorded (" +
         std::to_string(recorded_seconds.size()) + "), " + format_fixed(p50.unrecorded * 1e3, 3) +
         " ms not recorded (" + std::to_string(unrecorded_seconds.size()) +
         "): " + format_fixed(p50.ratio(), 4) + "x";
}

}  // namespace gradwire::bench
