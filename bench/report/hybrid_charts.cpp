#include "cases/hybrid_results.h"
#include "harness/stats.h"
#include "harness/table.h"
#include "report/charts.h"

namespace gradwire::bench {

namespace {

// finish_chart with a linear x axis: percentiles, epochs and trainers are not doublings.
ChartSpec linear(ChartSpec chart) {
  finish_chart(chart);
  chart.x_scale = AxisScale::kLinear;
  return chart;
}

struct Side {
  HybridResult result;
  bool dashed = false;
};

std::vector<Side> sides_of(const nlohmann::json& document, const std::string& source) {
  std::vector<Side> sides = {{parse_hybrid_result(document, source), false}};
  const auto reference = document.find("reference");
  if (reference != document.end() && reference->is_object()) {
    sides.push_back({parse_hybrid_result(*reference, source + " reference"), true});
  }
  return sides;
}

ChartSpec rates_chart(const std::vector<Side>& sides, const std::string& source) {
  ChartSpec chart{"ex/sec of all trainers",  source + ": hybrid",
                  "percentile of sec/epoch", "examples per second (all trainers)",
                  "th percentile",           "ex/s"};
  for (const auto& side : sides) {
    const std::vector<double> seconds = pooled_seconds(side.result);
    if (seconds.empty()) continue;
    ChartSeries series{side.result.implementation, side.result.implementation, side.dashed, {}};
    for (const auto& p :
         rate_percentiles(seconds, total_examples_per_step(side.result), training_percentiles())) {
      series.points.push_back({static_cast<double>(p.percentile), p.examples_per_second,
                               format_fixed(p.seconds, 4) + " s/epoch"});
    }
    chart.series.push_back(std::move(series));
  }
  return linear(std::move(chart));
}

ChartSpec epochs_chart(const std::vector<Side>& sides, const std::string& source) {
  ChartSpec chart{
      "sec/epoch by epoch", source + ": hybrid", "measured epoch", "seconds per epoch", "", "s"};
  for (const auto& side : sides) {
    for (const auto& trainer : side.result.trainers) {
      ChartSeries series{side.result.implementation + " trainer " + std::to_string(trainer.trainer),
                         side.result.implementation,
                         side.dashed,
                         {}};
      for (std::size_t e = 0; e < trainer.seconds.size(); ++e) {
        series.points.push_back({static_cast<double>(e + 1), trainer.seconds[e], ""});
      }
      chart.series.push_back(std::move(series));
    }
  }
  return linear(std::move(chart));
}

ChartSpec phases_chart(const std::vector<Side>& sides, const std::string& source) {
  ChartSpec chart{"phases by trainer (mean per epoch)",
                  source + ": hybrid",
                  "trainer",
                  "ms per epoch",
                  "",
                  "ms"};
  for (const auto& side : sides) {
    for (const auto& phase : hybrid_phases()) {
      ChartSeries series{side.result.implementation + " " + phase, phase, side.dashed, {}};
      for (const auto& trainer : side.result.trainers) {
        const auto found = trainer.phase_seconds.find(phase);
        if (found == trainer.phase_seconds.end() || found->second.empty()) continue;
        double sum = 0;
        for (const double s : found->second) sum += s;
        series.points.push_back({static_cast<double>(trainer.trainer),
                                 sum * 1e3 / static_cast<double>(found->second.size()), ""});
      }
      if (!series.points.empty()) chart.series.push_back(std::move(series));
    }
  }
  return linear(std::move(chart));
}

}  // namespace

std::vector<ChartSpec> hybrid_charts(const nlohmann::json& document, const std::string& source) {
  const std::vector<Side> sides = sides_of(document, source);
  return {rates_chart(sides, source), epochs_chart(sides, source), phases_chart(sides, source)};
}

}  // namespace gradwire::bench
