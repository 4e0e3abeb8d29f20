// The charts of a DDP benchmark result (gradwire-bench ddp, the reference script, PyTorch's
// benchmark.py): one chart per model of sec/iter against the number of ranks. Pure.
#pragma once

#include <string>
#include <vector>

#include "cases/ddp_results.h"
#include "report/charts.h"

namespace gradwire::bench {

// The percentiles a DDP chart draws: the main one as a solid line, the tail one dashed.
inline constexpr int kDdpChartMainPercentile = 50;
inline constexpr int kDdpChartTailPercentile = 90;

// One chart per model of `report`, in its order. Series "<implementation> p50" (solid) and
// "<implementation> p90" (dashed) over the DDP rounds, x = world size, y = seconds per
// iteration; the "no ddp" round is a baseline at its p50. When report.fields holds an embedded
// "reference" document (gradwire-bench ddp --reference), the reference's rounds of the same model
// and batch size are added the same way, in a second colour. A model without DDP rounds gets a
// chart with its baseline only. Throws InvalidArgument naming `source` for a malformed reference.
std::vector<ChartSpec> ddp_charts(const DdpReport& report, const std::string& source);

}  // namespace gradwire::bench
