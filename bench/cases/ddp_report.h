// How `gradwire-bench ddp` prints its results: the header block, and per model a table of
// sec/iter and ex/sec at p50/p75/p90/p95 for each configuration, laid out as PyTorch's DDP
// benchmark prints them; plus the comparison with the PyTorch reference in the training cases'
// form (trainer_report.h). Pure formatting.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cases/ddp_results.h"
#include "cases/parity.h"
#include "harness/hardware.h"
#include "harness/repeats.h"
#include "harness/table.h"

namespace gradwire::bench {

// What the header block says about the run.
struct DdpHeader {
  std::string gradwire_version;
  std::string torch_version;
  std::string backend;
  double bucket_cap_mb = 25;
  double first_bucket_mb = 1;
  int ranks = 1;           // processes taking part
  int ranks_per_node = 1;  // local world size
  int threads_per_rank = 1;
  std::int64_t image_size = 224;
  int warmup = 0;
  int iterations = 0;
  std::string reference;  // a line about the PyTorch reference; empty: not asked for
  std::string memory;     // the malloc policy (harness/memory.h); empty: not printed
  HardwareInfo hardware;
};

void print_ddp_header(std::ostream& out, const DdpHeader& header);

// Pure: seconds with 3 (>= 1 s), 4 (>= 10 ms) or 6 decimals, so small models stay readable.
std::string format_seconds(double seconds);
// The sec/iter and ex/sec cells of every ddp table (rows of training_percentiles(), diff's cells).
inline const RateColumns kDdpRateColumns{"sec/iter", 9, 1, format_seconds};

// "Benchmark: resnet50 with batch size 32" (upstream's wording).
std::string ddp_benchmark_title(const std::string& model, std::int64_t batch_size);
// The column headers above ddp_row lines.
std::string ddp_table_header();
// "   2 ranks --    1M/2R:  p50:  0.2150s   37.2/s  p75: ..." (no newline).
std::string ddp_row(const DdpRound& round, const std::string& label, std::int64_t batch_size);

// Compute parity (the "no ddp" round of both sides: "plain step (no ddp): gradwire p50 0.0900s,
// pytorch p50 0.1000s, 0.900x") is cases/parity.h's compute_parity_lines, shared with hybrid and
// ps.

// Pure: the reference's round matching `round` (same ddp flag and world size, and the same variant
// when both name one), if any.
const DdpRound* find_matching_round(const DdpModelResult& result, const DdpRound& round);
// Pure: the result for `model` and `batch_size` among `results`, if any.
const DdpModelResult* find_matching_model(const std::vector<DdpModelResult>& results,
                                          const std::string& model, std::int64_t batch_size);

// Each repeat's results of both sides, in the order they ran (gradwire-bench ddp --repeat).
using DdpRepeats = Repeats<std::vector<DdpModelResult>>;

// Pure: gradwire's p50 sec/iter over the reference's in each repeat that both measured for the
// configuration `round` of `model` (batch `batch_size`).
std::vector<double> p50_ratio_by_repeat(const DdpRepeats& repeats, const std::string& model,
                                        std::int64_t batch_size, const DdpRound& round);

// The whole comparison section under `reference_title`: per model of `gradwire` and each
// configuration the reference also measured, both sides' All rows and the ratios of sec/iter
// (trainer_report.h's print_trainer_comparison, RatioOf::kTime; with more than one repeat, the
// p50 ratio of every repeat and their median), then the plain step's parity. Models and
// configurations missing from the reference are named.
void print_ddp_comparison(std::ostream& out, const std::vector<DdpModelResult>& gradwire,
                          const DdpReport& reference, int ranks_per_node,
                          const std::string& reference_title, const DdpRepeats& repeats = {});

}  // namespace gradwire::bench
