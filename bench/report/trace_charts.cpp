// The charts of a document's traces (--trace): where each rank's time went (report/charts.h).
#include <algorithm>

#include "harness/trace_summary.h"
#include "report/charts.h"

namespace gradwire::bench {

namespace {

ChartSeries trace_segment(const std::string& name) { return {name, name, false, {}}; }

ChartSpec rank_bars(const TraceSummary& summary, const std::string& name, const std::string& path) {
  const bool per_step = std::all_of(summary.ranks.begin(), summary.ranks.end(),
                                    [](const RankTimeSummary& r) { return r.steps > 0; });
  ChartSpec chart;
  chart.kind = "stacked_bars";
  chart.title = "where the time went: " + name + (per_step ? " (ms per step)" : " (ms)");
  chart.subtitle = "trace " + path +
                   "; compute, exposed and hidden communication, waits: "
                   "docs/benchmarks.md, --trace";
  chart.x_label = "rank";
  chart.y_label = per_step ? "ms per step" : "ms";
  chart.y_unit = "ms";
  std::vector<ChartSeries> series = {
      trace_segment("compute"), trace_segment("compute hiding communication"),
      trace_segment("exposed communication"), trace_segment("waits"), trace_segment("other")};
  for (std::size_t i = 0; i < summary.ranks.size(); ++i) {
    const RankTimeSummary& r = summary.ranks[i];
    chart.categories.push_back(r.process);
    const double scale = 1e3 / (per_step ? r.steps : 1);
    const double x = static_cast<double>(i);
    const std::string note = std::to_string(r.steps) + " steps";
    series[0].points.push_back({x, (r.compute_s - r.hidden_s) * scale, note});
    series[1].points.push_back({x, r.hidden_s * scale, note});
    series[2].points.push_back({x, r.exposed_s * scale, note});
    series[3].points.push_back({x, r.waits_s * scale, note});
    series[4].points.push_back({x, r.other_s * scale, note});
  }
  chart.series = std::move(series);
  for (std::size_t i = 0; i < chart.categories.size(); ++i) {
    chart.x_values.push_back(static_cast<double>(i));
  }
  return chart;
}

ChartSpec server_bars(const TraceSummary& summary, const std::string& name,
                      const std::string& path) {
  ChartSpec chart;
  chart.kind = "stacked_bars";
  chart.title = "parameter servers: " + name + " (ms of their window)";
  chart.subtitle = "trace " + path + "; busy: the union of a server's spans but waits";
  chart.x_label = "server";
  chart.y_label = "ms";
  chart.y_unit = "ms";
  std::vector<ChartSeries> series = {trace_segment("busy"), trace_segment("idle")};
  for (std::size_t i = 0; i < summary.servers.size(); ++i) {
    const ServerTimeSummary& s = summary.servers[i];
    chart.categories.push_back(s.process);
    const double x = static_cast<double>(i);
    const std::string note = std::to_string(s.calls) + " calls";
    series[0].points.push_back({x, s.busy_s * 1e3, note});
    series[1].points.push_back({x, std::max(0.0, s.window_s - s.busy_s) * 1e3, note});
    chart.x_values.push_back(x);
  }
  chart.series = std::move(series);
  return chart;
}

}  // namespace

std::vector<ChartSpec> trace_charts(const nlohmann::json& document, const std::string& source) {
  std::vector<ChartSpec> charts;
  const auto traces = document.find("traces");
  if (traces == document.end() || !traces->is_array()) return charts;
  for (const auto& entry : *traces) {
    if (!entry.is_object() || !entry.contains("summary")) continue;
    const std::string name = entry.value("name", std::string("trace"));
    const std::string path = entry.value("path", std::string());
    const TraceSummary summary = trace_summary_from_json(entry.at("summary"), source);
    if (!summary.ranks.empty()) charts.push_back(rank_bars(summary, name, path));
    if (!summary.servers.empty()) charts.push_back(server_bars(summary, name, path));
  }
  return charts;
}

}  // namespace gradwire::bench
