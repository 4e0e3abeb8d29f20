// How `gradwire-bench hybrid` prints and stores its results: the header block; the tables of
// trainer_report.h (per trainer p50/p75/p90/p95 sec/epoch and ex/s plus "All", as PyTorch's DDP +
// RPC benchmark prints them; the per-phase split; the comparison with the PyTorch reference); and
// the JSON document. Pure formatting.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cases/hybrid_results.h"
#include "cases/hybrid_settings.h"
#include "cases/parity.h"
#include "cases/trainer_report.h"
#include "harness/hardware.h"
#include "harness/report.h"

namespace gradwire::bench {

// The header block of this build's gradwire and torch. `reference`: a line about the PyTorch
// reference; empty: not asked for.
void print_hybrid_header(std::ostream& out, const HybridSettings& settings,
                         const std::string& reference, const HardwareInfo& hardware);

// The columns of hybrid's tables: sec/epoch and ex/s without decimals (trainer_report.h).
const RateColumns& hybrid_rate_columns();

// trainer_report.h's table, phase split (hybrid_phases()) and comparison, with hybrid's columns.
void print_hybrid_table(std::ostream& out, const HybridResult& result, const std::string& title);
void print_hybrid_phases(std::ostream& out, const HybridResult& result, const std::string& title);
void print_hybrid_comparison(std::ostream& out, const HybridResult& gradwire,
                             const HybridResult& reference, const std::string& title,
                             const std::vector<double>& ratio_by_repeat);

// How the plain step's lines name it (cases/parity.h): "plain step (no ps, no ddp: an epoch of 10
// batches in one process)", its difference being in "the gradwire/pytorch ratios above" rather
// than in "DDP and the parameter servers".
PlainStepNames hybrid_plain_step_names(const HybridSettings& settings);

// What the JSON document holds besides the results.
struct HybridDocumentInputs {
  RunMetadata metadata;
  HybridSettings settings;
  HybridResult gradwire;                    // pooled over repeats
  std::optional<nlohmann::json> reference;  // the reference's document, pooled trainers
  std::vector<double> ratio_by_repeat;      // empty without a reference
  std::optional<PlainStepParity> plain_step;  // both sides' plain steps; with a reference only
  // Per repeat, trainer 0's transport per server after training (cases/ps_transports.h).
  std::vector<std::vector<std::string>> transports;
};
// {"schema_version", "benchmark": "hybrid", "metadata" (backend: the dense part's communicator),
//  "implementation": "gradwire", "settings", "transport" (summarize_transports), "transports"
//  (per repeat, per server), "trainers", "summary": {"all": {p50.. sec/epoch and ex/s}},
//  "reference", "comparison": {"all_p50_ex_s_ratio", "ratio_by_repeat"}, "plain_step"
//  (plain_step_json, when given), "rows"} (docs/benchmarks.md); the
// generic rows (harness/rows.h) are sec/epoch by implementation and trainer.
nlohmann::json hybrid_document(const HybridDocumentInputs& inputs);

}  // namespace gradwire::bench
