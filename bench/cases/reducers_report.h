// What `gradwire-bench reducers` measured and how it prints it: per bucket size, forward and
// backward latency of each reducer (mean, p50, p90, p95, p99) with delta% against the first
// reducer, as compare_ddp.py's summaries; a closing table of backward latency by bucket size; and
// the JSON results. Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gradwire/ddp/ddp.h"
#include "harness/rows.h"

namespace gradwire::bench {

// One reducer at one bucket size: every rank's samples, rank 0's first, in milliseconds.
struct ReducerMeasurement {
  ddp::ReductionSchedule reducer = ddp::ReductionSchedule::kOverlapped;
  std::size_t buckets = 0;  // buckets DDP used (after its rebuild)
  std::vector<double> forward_ms;
  std::vector<double> backward_ms;
};

struct BucketSizeResult {
  double bucket_size_mb = 0;
  std::vector<ReducerMeasurement> reducers;  // the first is the baseline of delta%
};

// Pure: 100 * (value - baseline) / baseline, as compare_ddp.py (positive: slower than the
// baseline). 0 when the baseline is 0.
double latency_change_percent(double baseline, double value);

// "=== Summary for bucket size: 3 MiB ===" and two tables (forward, backward); lines end in '\n'.
std::string reducers_summary(const BucketSizeResult& result);

// Backward mean (ms) of every reducer per bucket size, and each one's delta% against the first.
std::string reducers_overview(const std::vector<BucketSizeResult>& results);

// The "results" array of the JSON (docs/benchmarks.md): per bucket size, per reducer its name,
// bucket count, and forward_ms / backward_ms summaries (count, mean, min, max, p50 ... p99), plus
// the raw samples under forward_samples_ms / backward_samples_ms.
nlohmann::json reducers_results_json(const std::vector<BucketSizeResult>& results);

// The generic rows (harness/rows.h): labels phase (forward, backward), reducer and
// bucket_size_mb; every rank's samples in milliseconds.
RowSet reducers_rows(const std::vector<BucketSizeResult>& results);

}  // namespace gradwire::bench
