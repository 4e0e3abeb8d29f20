// How the training cases (training_case.h) print and store their results, laid out as PyTorch's
// DDP + RPC benchmark (benchmark_ddp_rpc.py) prints them: per trainer a row of p50/p75/p90/p95
// time per step and ex/s, then "All" (every step pooled, examples summed); reference 003's Pass
// lines; the per-phase split; the bytes moved; the comparison of two sides' All rows; and the one
// JSON document of every training case. Pure formatting.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cases/parity.h"
#include "cases/trainer_results.h"
#include "cases/training_case.h"
#include "harness/report.h"
#include "harness/rows.h"
#include "harness/table.h"

namespace gradwire::bench {

// The column headers above trainer_row lines (the percentiles of training_percentiles()).
std::string trainer_table_header(const RateColumns& columns);
// "Trainer0:  p50:   0.0210s    3286/s  p75: ..." (no newline); `examples` per step.
std::string trainer_row(const std::string& label, const std::vector<double>& seconds,
                        double examples, const RateColumns& columns);
// "TrainerN" rows in trainer order (trainers that measured nothing left out), then "All".
std::vector<std::string> trainer_rows(const TrainerResults& result, const RateColumns& columns);
// A blank line, the title, a blank line, the column headers and trainer_rows.
void print_trainer_table(std::ostream& out, const TrainerResults& result, const std::string& title,
                         const RateColumns& columns);

// The per-phase split: per trainer and for All (the trainers' mean), the mean ms per step of each
// of `phases` with its share of the step ("n/a" for a phase the side does not record), and what
// no phase covers ("other"). `step` names the first column: "epoch" -> "epoch ms".
void print_phase_split(std::ostream& out, const TrainerResults& result, const std::string& title,
                       const std::vector<std::string>& phases, const std::string& step);

// The two sides of a comparison as its lines name them ("gradwire", "pytorch").
struct SideNames {
  std::string ours;
  std::string theirs;
};
// What a comparison's ratios ours/theirs are of: ex/s (above 1: ours trains faster), or the time
// per step (below 1: ours is faster; ddp's, as PyTorch's DDP benchmark compares sec/iter).
enum class RatioOf { kRate, kTime };
// Both All rows and the ratio ours/theirs at each percentile ("gradwire/pytorch ex/s: p50: 10.00x
// ...", "gradwire/pytorch sec/iter: ..."); with more than one repeat also `ratio_by_repeat` (the
// p50 ratio of each repeat, of the same kind) and their median.
void print_trainer_comparison(std::ostream& out, const TrainerResults& ours,
                              const TrainerResults& theirs, const std::string& title,
                              const std::vector<double>& ratio_by_repeat,
                              const RateColumns& columns, const SideNames& names,
                              RatioOf ratio_of = RatioOf::kRate);

// {"examples_per_STEP", "p50_sec_per_STEP", "p50_ex_per_sec", ... p95}: the All row; empty when
// nothing was measured.
nlohmann::json all_summary(const TrainerResults& result, const StepNames& names);
// One generic row (harness/rows.h) per trainer: its seconds per step, labelled with the
// implementation and the trainer.
void add_trainer_rows(RowSet& rows, const TrainerResults& result);

// The phases of `phases` that some trainer of `result` records, in that order.
std::vector<std::string> recorded_phases(const TrainerResults& result,
                                         const std::vector<std::string>& phases);

// One pass of `steps` steps of the whole job: its wall time (the slowest trainer's sum of its
// steps) and its examples (every trainer's).
struct PassFigures {
  int pass = 0;
  double elapsed_s = 0;
  double images = 0;
  double images_per_second() const { return elapsed_s > 0 ? images / elapsed_s : 0.0; }
};
// Every complete pass of `result` (trainers that measured fewer steps end the list). Throws
// InvalidArgument when steps < 1.
std::vector<PassFigures> pass_figures(const TrainerResults& result, int steps);
// Reference 003's line: "Pass = 0, Elapsed = 2.41, Training performance = 146.812973 imgs/s"
// (elapsed in seconds with two decimals: our passes are short).
std::string pass_line(const PassFigures& pass);

// Per byte name a trainer counts ("pushed", "pulled"): the mean per step and per second of its
// steps; for All, the trainers' rates summed.
struct ByteRate {
  double per_step = 0;
  double per_second = 0;
};
std::map<std::string, ByteRate> byte_rates(const TrainerSamples& trainer);
std::map<std::string, ByteRate> total_byte_rates(const TrainerResults& result);

// A side's tables under `title`: the Pass lines (steps_per_pass > 0), the per-trainer table, the
// phase split of the format's phases it records and, when it counts bytes, the bytes per step and
// per second.
void print_side(std::ostream& out, const TrainerResults& side, const std::string& title,
                const TrainingFormat& format, int steps_per_pass);

// What a trainer job's result file holds: {"implementation", "trainers", "backend",
// "transports", "details", "text"}, and back (parse_trainer_results' errors).
nlohmann::json to_json(const JobResult& result, const StepNames& names);
JobResult parse_job_result(const nlohmann::json& document, const std::string& source,
                           const StepNames& names);

// What the training document holds (training_document).
struct TrainingDocumentInputs {
  RunMetadata metadata;
  nlohmann::json settings;
  int steps_per_pass = 0;
  std::vector<TrainingJob> jobs;
  std::vector<TrainerResults> sides;  // per job, every repeat pooled
  // Per job, per repeat: trainer 0's facts (its backend, transports) and its results.
  std::vector<std::vector<JobResult>> repeats;
  std::optional<nlohmann::json> reference;  // the reference's document, pooled trainers
  std::vector<TrainerResults> reference_repeats;
  std::optional<PlainStepParity> plain_step;  // with a reference only
  PlainStepNames plain_names;
  // --trace: the entries of harness/traces.h, one per traced job; empty: the document has none.
  nlohmann::json traces = nlohmann::json::array();
};
// The document of every training case (docs/benchmarks.md "Training results"):
// {"schema_version", "benchmark", "metadata", "implementation", "settings", "step",
//  "step_time", "phases", "steps_per_pass" (when > 0), "transport", "transports", "details",
//  "backend", "threads", "trainers", "summary", "passes" (the first job's side), "compare":
//  {KIND: side}, "reference", "comparison": {IMPLEMENTATION: {"pooled", "by_repeat", "median"}},
//  "plain_step", "rows", "traces" (with --trace)}; a side is {"implementation", "backend", "threads", "trainers",
// "summary": {"all", "bytes"}, "passes"}.
nlohmann::json training_document(const TrainingFormat& format,
                                 const TrainingDocumentInputs& inputs);

}  // namespace gradwire::bench
