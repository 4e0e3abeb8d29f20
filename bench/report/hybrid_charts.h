// The charts of a hybrid result document (gradwire-bench hybrid --json, with or without its
// embedded PyTorch reference), which `gradwire-bench report` and `hybrid --html` draw. Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/charts.h"

namespace gradwire::bench {

// Three charts: "ex/sec of all trainers" (x = percentile 50/75/90/95; one series per
// implementation), "sec/epoch by epoch" (one series per trainer and implementation, the
// reference's dashed) and "phases by trainer" (ms per epoch; one series per phase and
// implementation). Throws InvalidArgument naming `source` when the document is not a hybrid
// result (parse_hybrid_result).
std::vector<ChartSpec> hybrid_charts(const nlohmann::json& document, const std::string& source);

}  // namespace gradwire::bench
