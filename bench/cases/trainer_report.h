// How the cases that train in several trainer processes (hybrid, ps) print their results, laid out
// as PyTorch's DDP + RPC benchmark (benchmark_ddp_rpc.py) prints them: per trainer a row of
// p50/p75/p90/p95 time per step and ex/s, then "All" (every step pooled, examples summed); the
// per-phase split; the comparison of two sides' All rows; and the JSON's summary and generic rows.
// Pure formatting.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cases/trainer_results.h"
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
// Both All rows and the ratio ours/theirs of ex/s at each percentile ("gradwire/pytorch ex/s:
// p50: 10.00x ..."); with more than one repeat also the p50 ratio of each repeat and their median.
void print_trainer_comparison(std::ostream& out, const TrainerResults& ours,
                              const TrainerResults& theirs, const std::string& title,
                              const std::vector<double>& ratio_by_repeat,
                              const RateColumns& columns, const SideNames& names);

// {"examples_per_STEP", "p50_sec_per_STEP", "p50_ex_per_sec", ... p95}: the All row; empty when
// nothing was measured.
nlohmann::json all_summary(const TrainerResults& result, const StepNames& names);
// One generic row (harness/rows.h) per trainer: its seconds per step, labelled with the
// implementation and the trainer.
void add_trainer_rows(RowSet& rows, const TrainerResults& result);

}  // namespace gradwire::bench
