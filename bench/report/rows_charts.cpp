#include <cstdio>

#include "harness/rows.h"
#include "harness/stats.h"
#include "report/charts.h"

namespace gradwire::bench {

namespace {

// The chart of `key` in `charts`, made on first use.
ChartSpec& chart_for(std::vector<ChartSpec>& charts, std::vector<std::string>& keys,
                     const std::string& key, const RowSet& rows, const std::string& title,
                     const std::string& source) {
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == key) return charts[i];
  }
  keys.push_back(key);
  ChartSpec chart;
  chart.title = key.empty() ? title : title + ": " + key;
  chart.subtitle = source + ": " + title;
  chart.x_label = rows.x.empty() ? "row" : rows.x;
  chart.y_label = rows.unit;
  chart.y_unit = rows.unit;
  charts.push_back(std::move(chart));
  return charts.back();
}

// The p50 (solid) and p90 (dashed) series of `group` in `chart`, made on first use.
ChartSeries* series_for(ChartSpec& chart, const std::string& group) {
  for (std::size_t i = 0; i < chart.series.size(); i += 2) {
    if (chart.series[i].group == group) return &chart.series[i];
  }
  chart.series.push_back({group + " p50", group, false, {}});
  chart.series.push_back({group + " p90", group, true, {}});
  return &chart.series[chart.series.size() - 2];
}

}  // namespace

std::vector<ChartSpec> rows_charts(const RowSet& rows, const std::string& title,
                                   const std::string& source) {
  std::vector<ChartSpec> charts;
  std::vector<std::string> keys;
  for (const auto& row : rows.rows) {
    std::string key;
    if (!rows.chart_by.empty() && row.labels.contains(rows.chart_by)) {
      key = describe_labels(row, {rows.chart_by});
    }
    ChartSpec& chart = chart_for(charts, keys, key, rows, title, source);
    std::string group = describe_labels(row, rows.dimensions, {rows.x, rows.chart_by});
    if (group.empty()) group = title;
    const auto x = rows.x.empty() ? row.labels.end() : row.labels.find(rows.x);
    if (!rows.x.empty() && x == row.labels.end()) {  // a row measured at no x: a baseline
      chart.baselines.push_back({group + " (p50)", group, percentile(row.samples, 50)});
      continue;
    }
    ChartSeries* series = series_for(chart, group);
    const double position = x != row.labels.end() && x->is_number()
                                ? x->get<double>()
                                : static_cast<double>(series->points.size() + 1);
    char note[64];
    std::snprintf(note, sizeof note, "%zu samples", row.samples.size());
    series[0].points.push_back({position, percentile(row.samples, 50), note});
    series[1].points.push_back({position, percentile(row.samples, 90), note});
  }
  for (auto& chart : charts) finish_chart(chart);
  return charts;
}

std::vector<ChartSpec> rows_charts(const nlohmann::json& document, const std::string& source) {
  return rows_charts(parse_row_set(document, source),
                     document.value("benchmark", std::string("rows")), source);
}

}  // namespace gradwire::bench
