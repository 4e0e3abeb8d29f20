// The timeline's cost measured within one run (docs/timeline.md, "Measuring it within one run"):
// with GRADWIRE_TIMELINE and GRADWIRE_TIMELINE_ALTERNATE_MS, every process of a job records only
// in half of the windows of the job's clock (timeline::window_records); a case marks each step it
// times as recorded throughout, not recorded at all, or neither, and compares the p50 of the first
// two groups.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gradwire::bench {

// A step's place among the windows of this process's alternating timeline. begin() before the
// step, end() after it: 1, 0 or -1 as timeline::recorded_throughout, with a margin of
// kAlternationMarginNs after each boundary (every process of the job may not have switched yet).
// active() is false when no alternating timeline runs; end() then returns -1.
class AlternationProbe {
 public:
  static constexpr int64_t kAlternationMarginNs = 2'000'000;
  AlternationProbe();  // reads timeline::alternate_ns() once
  bool active() const { return alternate_ns_ > 0; }
  void begin();
  double end() const;

 private:
  int64_t alternate_ns_ = 0;
  int64_t start_ns_ = 0;
};

// Steps pooled from one or several processes: those recorded throughout and those not recorded.
struct AlternatedSteps {
  std::vector<double> recorded_seconds;
  std::vector<double> unrecorded_seconds;
  // Adds the steps of `seconds` marked 1 or 0 in `recorded` (AlternationProbe::end, one per step;
  // nothing when the lengths differ).
  void add(const std::vector<double>& seconds, const std::vector<double>& recorded);
  bool comparable() const { return !recorded_seconds.empty() && !unrecorded_seconds.empty(); }
  // {"recorded_STEPs": n, "unrecorded_STEPs": n, "recorded_p50_sec_per_STEP": s,
  //  "unrecorded_p50_sec_per_STEP": s, "p50_ratio": recorded / unrecorded}; null unless
  // comparable().
  nlohmann::json to_json(const std::string& step) const;
  // "the timeline alternating (GRADWIRE_TIMELINE_ALTERNATE_MS): p50 1.234 ms per STEP recorded
  // (n), 1.200 ms not recorded (n): 1.0283x"; empty unless comparable().
  std::string line(const std::string& step) const;
};

}  // namespace gradwire::bench
