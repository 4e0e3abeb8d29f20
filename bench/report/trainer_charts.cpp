// The charts of every training case's document (charts.h: training_charts).
#include "cases/trainer_report.h"
#include "cases/trainer_results.h"
#include "harness/report.h"
#include "harness/stats.h"
#include "harness/table.h"
#include "report/charts.h"

namespace gradwire::bench {

namespace {

// A side of the document, drawn solid or dashed (the reference).
struct TrainerChartSide {
  TrainerResults result;
  bool dashed = false;
};
// What the document says about its steps.
struct TrainerChartStyle {
  std::string benchmark;  // "hybrid", in subtitles
  std::string step;       // "epoch"
  std::string time_name;  // "sec/epoch"
  std::vector<std::string> phases;
};

// finish_chart with a linear x axis: percentiles, steps, passes and trainers are not doublings.
ChartSpec linear(ChartSpec chart) {
  finish_chart(chart);
  chart.x_scale = AxisScale::kLinear;
  return chart;
}

std::string subtitle(const std::string& source, const TrainerChartStyle& style) {
  return source + ": " + style.benchmark;
}

ChartSpec rates_chart(const std::vector<TrainerChartSide>& sides, const std::string& source,
                      const TrainerChartStyle& style) {
  ChartSpec chart{"ex/sec of all trainers",
                  subtitle(source, style),
                  "percentile of " + style.time_name,
                  "examples per second (all trainers)",
                  "th percentile",
                  "ex/s"};
  for (const auto& side : sides) {
    const std::vector<double> seconds = pooled_seconds(side.result);
    if (seconds.empty()) continue;
    ChartSeries series{side.result.implementation, side.result.implementation, side.dashed, {}};
    for (const auto& p :
         rate_percentiles(seconds, total_examples_per_step(side.result), training_percentiles())) {
      series.points.push_back({static_cast<double>(p.percentile), p.examples_per_second,
                               format_fixed(p.seconds, 4) + " s/" + style.step});
    }
    chart.series.push_back(std::move(series));
  }
  return linear(std::move(chart));
}

ChartSpec steps_chart(const std::vector<TrainerChartSide>& sides, const std::string& source,
                      const TrainerChartStyle& style) {
  ChartSpec chart{style.time_name + " by " + style.step,
                  subtitle(source, style),
                  "measured " + style.step,
                  "seconds per " + style.step,
                  "",
                  "s"};
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

ChartSpec phases_chart(const std::vector<TrainerChartSide>& sides, const std::string& source,
                       const TrainerChartStyle& style) {
  ChartSpec chart{"phases by trainer (mean per " + style.step + ")",
                  subtitle(source, style),
                  "trainer",
                  "ms per " + style.step,
                  "",
                  "ms"};
  for (const auto& side : sides) {
    for (const auto& phase : style.phases) {
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

// A side embedded under `key` of `document` (an object), when there is one.
void add_embedded_side(std::vector<TrainerChartSide>& sides, const nlohmann::json& document,
                       const std::string& key, const std::string& source, const StepNames& names,
                       bool dashed) {
  const auto found = document.find(key);
  if (found == document.end() || !found->is_object()) return;
  sides.push_back({parse_trainer_results(*found, source + " " + key, names), dashed});
}

ChartSpec passes_chart(const std::vector<TrainerChartSide>& sides, int steps,
                       const std::string& source, const TrainerChartStyle& style) {
  ChartSpec chart{
      "imgs/s by pass", subtitle(source, style), "pass", "images per second (the job)", "",
      "imgs/s"};
  for (const auto& side : sides) {
    ChartSeries series{side.result.implementation, side.result.implementation, side.dashed, {}};
    for (const auto& pass : pass_figures(side.result, steps)) {
      series.points.push_back({static_cast<double>(pass.pass), pass.images_per_second(),
                               format_fixed(pass.elapsed_s, 2) + " s"});
    }
    if (!series.points.empty()) chart.series.push_back(std::move(series));
  }
  return linear(std::move(chart));
}

}  // namespace

std::vector<ChartSpec> training_charts(const nlohmann::json& document, const std::string& source) {
  const std::string benchmark = document.value("benchmark", std::string("training"));
  const TrainerChartStyle style{
      benchmark, require_field(document, "step", source, benchmark).get<std::string>(),
      document.value("step_time", std::string("sec/step")),
      document.value("phases", std::vector<std::string>())};
  const StepNames names{benchmark, style.step};
  std::vector<TrainerChartSide> sides = {{parse_trainer_results(document, source, names), false}};
  const auto compare = document.find("compare");
  if (compare != document.end() && compare->is_object()) {
    for (const auto& item : compare->items()) {
      add_embedded_side(sides, *compare, item.key(), source, names, false);
    }
  }
  add_embedded_side(sides, document, "reference", source, names, true);
  std::vector<ChartSpec> charts;
  const int steps_per_pass = document.value("steps_per_pass", 0);
  if (steps_per_pass > 0) charts.push_back(passes_chart(sides, steps_per_pass, source, style));
  charts.push_back(rates_chart(sides, source, style));
  charts.push_back(steps_chart(sides, source, style));
  charts.push_back(phases_chart(sides, source, style));
  return charts;
}

}  // namespace gradwire::bench
