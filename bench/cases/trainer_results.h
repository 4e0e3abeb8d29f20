// The measurements of the cases that train in several trainer processes (hybrid, ps), in one
// shape for gradwire and for a PyTorch reference: per trainer and measured step (hybrid: an epoch
// of batches; ps: one iteration) its seconds, its examples, the seconds of each phase and, where
// the case counts them, bytes moved. Their JSON form, the "All" figures (every trainer's steps
// pooled, examples summed over the trainers), the pooling of repeats, and the flat form in which
// the trainers gather them. Pure.
//
// JSON of one side (docs/benchmarks.md), STEP being the case's step name ("epoch", "iteration"):
//   {"implementation": "gradwire", "trainers": [{"trainer": 0, "STEP_seconds": [...],
//    "examples_per_STEP": [...], "phase_seconds": {"<phase>": [...], ...},
//    "bytes": {"<name>": [...], ...}, "timeline_recorded": [...]}, ...]}
// Every list has one entry per measured step; "bytes" only where counted, "timeline_recorded"
// only when the timeline alternated. A reader also takes a
// single number for examples_per_STEP (the same examples every step, as ps_reference.py writes).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/alternation.h"

namespace gradwire::bench {

struct TrainerSamples {
  int trainer = 0;
  std::vector<double> seconds;                               // per measured step
  std::vector<std::int64_t> examples;                        // per measured step
  std::map<std::string, std::vector<double>> phase_seconds;  // by phase name, per measured step
  std::map<std::string, std::vector<double>> bytes;          // by name, per measured step
  // Per measured step when the timeline alternates (GRADWIRE_TIMELINE_ALTERNATE_MS), else empty:
  // 1 recorded throughout, 0 not recorded at all, -1 neither (AlternationProbe).
  std::vector<double> timeline_recorded;

  // Mean examples per measured step (0 when there are none).
  double mean_examples() const;
};

struct TrainerResults {
  std::string implementation;            // "gradwire", "pytorch"...
  std::vector<TrainerSamples> trainers;  // ordered by trainer
};

// What a case calls its step, for the JSON keys, and its name in messages.
struct StepNames {
  std::string benchmark;  // "hybrid"
  std::string step;       // "epoch": "epoch_seconds", "examples_per_epoch"
  std::string seconds_key() const { return step + "_seconds"; }
  std::string examples_key() const { return "examples_per_" + step; }
};

// The "All" row's inputs: every trainer's steps pooled, and the trainers' mean examples summed
// (the job's examples per step).
std::vector<double> pooled_seconds(const TrainerResults& result);
double total_examples_per_step(const TrainerResults& result);

// The p50 ex/s of the All row (0 when nothing was measured).
double all_p50_examples_per_second(const TrainerResults& result);

// Repeats pooled: per trainer, every repeat's steps in order. Throws InvalidArgument when the
// repeats disagree on the trainers.
TrainerResults pool_trainer_repeats(const std::vector<TrainerResults>& repeats);

// Per repeat both sides measured: the All p50 ex/s of `ours` over `theirs`' (repeats where
// theirs measured nothing are left out).
std::vector<double> p50_ratio_by_repeat(const std::vector<TrainerResults>& ours,
                                        const std::vector<TrainerResults>& theirs);

nlohmann::json to_json(const TrainerSamples& trainer, const StepNames& names);
nlohmann::json trainers_to_json(const TrainerResults& result, const StepNames& names);
// Reads "implementation" and "trainers" of a document. Throws InvalidArgument naming `source` and
// the field when one is missing, of the wrong type, or the lists' lengths disagree.
TrainerResults parse_trainer_results(const nlohmann::json& document, const std::string& source,
                                     const StepNames& names);

// The flat form of one trainer's samples for a gather: seconds, examples, then each of `phases`
// and each of `byte_names` (a missing one as zeros), every row as long as `seconds`.
struct SampleRows {
  std::vector<std::string> phases;
  std::vector<std::string> byte_names;
  bool timeline_recorded = false;  // the timeline_recorded row last (missing: -1s)
  std::size_t rows() const {
    return 2 + phases.size() + byte_names.size() + (timeline_recorded ? 1 : 0);
  }
};

// The steps that the timeline recorded throughout and those it did not record at all, pooled over
// the trainers, when it alternated (steps that crossed a boundary are left out).
AlternatedSteps alternated_steps(const TrainerResults& result);
std::vector<double> flatten_samples(const TrainerSamples& samples, const SampleRows& layout);
// Every trainer's flat samples one after the other (trainer 0 first), back into results. Throws
// InvalidArgument when the size is not `trainers` x layout.rows() x steps.
TrainerResults unflatten_samples(const std::vector<double>& flat, int trainers,
                                 const SampleRows& layout, const std::string& implementation);

}  // namespace gradwire::bench
