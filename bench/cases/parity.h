// Compute parity: the plain training step of both sides of a comparison (no DDP, no parameter
// servers: the model trained in one process), timed in the same run, so that a reader can tell
// how much of a gradwire/pytorch ratio is plain compute (libtorch against PyTorch on the same
// model and batches) rather than the distributed part. ddp's baseline round is that step;
// hybrid and ps time it on each side besides their runs (docs/benchmarks.md). Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace gradwire::bench {

// How a case names its plain step in the parity lines:
//   "plain step (<what>): gradwire p50 0.0900s, pytorch p50 0.1000s, 0.900x"
//   "  they differ by more than 10%: <ratios> include that difference in plain compute, not only
//    <distributed>"
// The defaults are ddp's.
struct PlainStepNames {
  std::string what = "no ddp";
  std::string ratios = "the DDP ratios above";
  std::string distributed = "the distributed part";
};

// Both sides' p50 seconds per plain step, gradwire's over the reference's, and whether they differ
// by more than 10% (either way).
struct Parity {
  double gradwire_p50 = 0;
  double reference_p50 = 0;
  double ratio = 0;
  bool differs = false;
};
// Pure: nullopt when either side has no measurement (or the reference's p50 is not positive).
std::optional<Parity> compute_parity(const std::vector<double>& gradwire_seconds,
                                     const std::vector<double>& reference_seconds);

// Pure: the parity line, followed by a warning line when the plain steps differ by more than 10%,
// since every ratio of the comparison then also measures a difference in plain compute. Empty
// when either side has no measurement.
std::vector<std::string> compute_parity_lines(const std::vector<double>& gradwire_seconds,
                                              const std::vector<double>& reference_seconds,
                                              const PlainStepNames& names = {});

// One side's plain step: the seconds of each timed step (every repeat's, in order), the untimed
// steps before them, and the intra-op threads it ran with (its trainers').
struct PlainStep {
  std::vector<double> seconds;
  int warmup = 0;
  int threads = 1;
};
// {"seconds": [...], "warmup": W, "threads": N}: the shape the reference scripts write as their
// document's "plain_step" (bench/reference/reference_common.py, time_plain_steps).
nlohmann::json to_json(const PlainStep& step);
// Pure: the inverse; throws InvalidArgument naming `source` when `json` has not that shape.
PlainStep parse_plain_step(const nlohmann::json& json, const std::string& source);

// Both sides of a run, repeats pooled; the reference's is nullopt when its document had none
// (a reference script from before the plain step).
struct PlainStepParity {
  PlainStep gradwire;
  std::optional<PlainStep> reference;
};
// Pure: one repeat's plain step of gradwire pooled into `parity` (the first sets it, later ones
// append their seconds).
void add_gradwire_plain_step(PlainStepParity& parity, const PlainStep& step);
// Pure: likewise the reference's, from the "plain_step" of the document it wrote (`source` names
// it in errors, parse_plain_step); nothing when the document has none.
void add_reference_plain_step(PlainStepParity& parity, const nlohmann::json& document,
                              const std::string& source);

// Pure: the lines after a comparison: compute_parity_lines, then, when the two sides ran with
// different thread counts, a note saying so; or one line saying the reference timed no plain
// step.
std::vector<std::string> plain_step_lines(const PlainStepParity& parity,
                                          const PlainStepNames& names);
// A blank line, then plain_step_lines.
void print_plain_step_parity(std::ostream& out, const PlainStepParity& parity,
                             const PlainStepNames& names);

// The result document's "plain_step": {"what": names.what, "gradwire": to_json, "pytorch":
// to_json or null, "p50_ratio": gradwire/pytorch or null, "differs_by_more_than_10_percent":
// bool or null}.
nlohmann::json plain_step_json(const PlainStepParity& parity, const PlainStepNames& names);

}  // namespace gradwire::bench
