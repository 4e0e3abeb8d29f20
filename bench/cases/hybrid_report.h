// How `gradwire-bench hybrid` prints and stores its results: the header block; per trainer a row
// of p50/p75/p90/p95 sec/epoch and ex/s plus the "All" row, laid out as PyTorch's DDP + RPC
// benchmark (PyTorch's benchmark_ddp_rpc.py) prints them; the per-phase split; the comparison with
// the PyTorch reference; and the JSON document. Pure formatting.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cases/hybrid_results.h"
#include "cases/hybrid_settings.h"
#include "harness/hardware.h"
#include "harness/report.h"

namespace gradwire::bench {

// The header block of this build's gradwire and torch. `reference`: a line about the PyTorch
// reference; empty: not asked for.
void print_hybrid_header(std::ostream& out, const HybridSettings& settings,
                         const std::string& reference, const HardwareInfo& hardware);

// "TrainerN" rows in trainer order, then "All" (every epoch pooled, examples summed).
std::vector<std::string> hybrid_rows(const HybridResult& result);
// A title line, the column headers and hybrid_rows.
void print_hybrid_table(std::ostream& out, const HybridResult& result, const std::string& title);

// The per-phase split: per trainer and for All, the mean ms per epoch of each phase of
// hybrid_phases() with its share of the epoch ("n/a" for a phase the side does not record), and
// what no phase covers ("other").
void print_hybrid_phases(std::ostream& out, const HybridResult& result, const std::string& title);

// Pure: gradwire's All p50 ex/s over the reference's, per repeat both measured.
std::vector<double> hybrid_ratio_by_repeat(const std::vector<HybridResult>& gradwire,
                                           const std::vector<HybridResult>& reference);

// Both All rows and the ratio gradwire/PyTorch of ex/s at each percentile; with more than one
// repeat also the p50 ratio of each repeat and their median.
void print_hybrid_comparison(std::ostream& out, const HybridResult& gradwire,
                             const HybridResult& reference, const std::string& title,
                             const std::vector<double>& ratio_by_repeat);

// What the JSON document holds besides the results.
struct HybridDocumentInputs {
  RunMetadata metadata;
  HybridSettings settings;
  HybridResult gradwire;                    // pooled over repeats
  std::optional<nlohmann::json> reference;  // the reference's document, pooled trainers
  std::vector<double> ratio_by_repeat;      // empty without a reference
};
// {"schema_version", "benchmark": "hybrid", "metadata", "implementation": "gradwire",
//  "settings", "trainers", "summary": {"all": {p50.. sec/epoch and ex/s}}, "reference",
//  "comparison": {"all_p50_ex_s_ratio", "ratio_by_repeat"}, "rows"} (docs/benchmarks.md); the
// generic rows (harness/rows.h) are sec/epoch by implementation and trainer.
nlohmann::json hybrid_document(const HybridDocumentInputs& inputs);

}  // namespace gradwire::bench
