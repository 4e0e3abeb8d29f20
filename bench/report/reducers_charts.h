// The charts of a reducers benchmark result (gradwire-bench reducers --json): forward and
// backward latency against the DDP bucket size, one colour per reducer. Pure.
//
// The document's results (docs/benchmarks.md has the whole schema):
//   "results": [{"bucket_size_mb": 3, "reducers": [{"reducer": "overlapped", "buckets": 9,
//                 "forward_ms": {summary}, "backward_ms": {summary}}, ...]}, ...]
// where a summary holds count, mean, min, max, p50, p75, p90, p95 and p99 in milliseconds.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/charts.h"

namespace gradwire::bench {

// Two charts, "forward" then "backward": per reducer (in order of first appearance) a series
// "<reducer> p50" (solid) and "<reducer> mean" (dashed), x = bucket cap in MiB
// (DdpOptions::bucket_cap_mb), y = ms; each point's note gives the bucket count when the document
// has it. The titles name the model, batch size and world size from "settings" when present. Throws
// InvalidArgument naming `source` and the entry when "results" or a field of an entry is missing or
// has the wrong type.
std::vector<ChartSpec> reducers_charts(const nlohmann::json& document, const std::string& source);

}  // namespace gradwire::bench
