#include "report/charts.h"

#include <cstdio>
#include <optional>

#include "cases/ddp_report.h"
#include "cases/ddp_results.h"
#include "harness/stats.h"

namespace gradwire::bench {

namespace {

// The percentiles a DDP chart draws: the main one as a solid line, the tail one dashed.
constexpr int kDdpChartMainPercentile = 50;
constexpr int kDdpChartTailPercentile = 90;

// "20.0 ex/s per rank, 80 samples": the tooltip of a point.
std::string point_note(double seconds, std::int64_t batch_size, std::size_t samples) {
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "%.1f ex/s per rank, %zu samples",
                seconds > 0 ? static_cast<double>(batch_size) / seconds : 0.0, samples);
  return buffer;
}

// Adds the rounds of one implementation: its baseline, then its p50 and p90 series.
void add_rounds(ChartSpec& chart, const DdpModelResult& result, const std::string& group) {
  const std::string main_name = group + " p" + std::to_string(kDdpChartMainPercentile);
  const std::string tail_name = group + " p" + std::to_string(kDdpChartTailPercentile);
  ChartSeries main{main_name, group, false, {}};
  ChartSeries tail{tail_name, group, true, {}};
  for (const auto& round : result.rounds) {
    const double p_main = percentile(round.measurements, kDdpChartMainPercentile);
    if (!round.ddp) {
      const std::string what =
          round.world_size() == 1
              ? " no ddp"
              : " no ddp, " + std::to_string(round.world_size()) + " ranks at once, slowest";
      chart.baselines.push_back(
          {group + what + " (p" + std::to_string(kDdpChartMainPercentile) + ")", group, p_main});
      continue;
    }
    const double p_tail = percentile(round.measurements, kDdpChartTailPercentile);
    const auto x = static_cast<double>(round.world_size());
    const std::size_t samples = round.measurements.size();
    main.points.push_back({x, p_main, point_note(p_main, result.batch_size, samples)});
    tail.points.push_back({x, p_tail, point_note(p_tail, result.batch_size, samples)});
  }
  if (!main.points.empty()) {
    chart.series.push_back(std::move(main));
    chart.series.push_back(std::move(tail));
  }
}

std::optional<DdpReport> embedded_reference(const DdpReport& report, const std::string& source) {
  const auto reference = report.fields.find("reference");
  if (reference == report.fields.end() || !reference->is_object()) return std::nullopt;
  return parse_ddp_document(*reference, source + " (embedded reference)");
}

}  // namespace

std::vector<ChartSpec> ddp_charts(const DdpReport& report, const std::string& source) {
  const std::optional<DdpReport> reference = embedded_reference(report, source);
  const std::string group = report.implementation;
  std::string reference_group;
  if (reference) {
    reference_group =
        reference->implementation == group ? group + " (reference)" : reference->implementation;
  }
  const std::string subtitle = source + ": " + group;
  std::vector<ChartSpec> charts;
  for (const auto& result : report.results) {
    ChartSpec chart;
    chart.title = result.model + ", batch size " + std::to_string(result.batch_size);
    chart.subtitle = subtitle;
    chart.x_label = "ranks (DDP world size)";
    chart.y_label = "sec/iter";
    chart.x_unit = "ranks";
    chart.y_unit = "s";
    add_rounds(chart, result, group);
    if (reference) {
      const DdpModelResult* match =
          find_matching_model(reference->results, result.model, result.batch_size);
      if (match != nullptr) {
        chart.subtitle += " vs " + reference_group + " (embedded reference)";
        add_rounds(chart, *match, reference_group);
      } else {
        chart.subtitle += " (the embedded reference lacks this model)";
      }
    }
    finish_chart(chart);
    charts.push_back(std::move(chart));
  }
  return charts;
}

}  // namespace gradwire::bench
