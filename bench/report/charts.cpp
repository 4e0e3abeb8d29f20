#include "report/charts.h"

#include <algorithm>

#include "cases/ddp_results.h"
#include "gradwire/common/error.h"
#include "harness/report.h"

namespace gradwire::bench {

namespace {

// A log2 axis once the values span two doublings (world sizes 1, 2, 4); closer values read
// better on a linear one.
constexpr double kLogScaleMinRatio = 4.0;

std::string known_kinds() {
  std::string text;
  for (const auto& kind : charted_benchmarks()) text += (text.empty() ? "" : ", ") + kind;
  return text;
}

// ddp's documents through the rows of their benchmark_results.
std::vector<ChartSpec> ddp_document_charts(const nlohmann::json& document,
                                           const std::string& source) {
  return rows_charts(ddp_rows(parse_ddp_document(document, source), source), "ddp", source);
}

std::vector<ChartSpec> charts_of_kind(const nlohmann::json& document, const std::string& source) {
  const auto version = document.find("schema_version");
  if (version == document.end()) {
    // PyTorch's benchmark.py writes no schema_version; anything else without one is not ours.
    if (document.contains("benchmark_results")) {
      return ddp_document_charts(document, source);
    }
    throw InvalidArgument(source +
                          " has no schema_version: it is neither a gradwire-bench result nor "
                          "PyTorch's benchmark.py result");
  }
  if (!version->is_number_integer() || version->get<int>() != kSchemaVersion) {
    throw InvalidArgument(source + " has schema_version " + version->dump() +
                          " but this gradwire-bench reads version " +
                          std::to_string(kSchemaVersion) + ": use a matching gradwire-bench");
  }
  const auto benchmark = document.find("benchmark");
  if (benchmark == document.end() || !benchmark->is_string()) {
    throw InvalidArgument(source + " names no benchmark: it is not a gradwire-bench result");
  }
  const std::string kind = benchmark->get<std::string>();
  if (kind == "ddp") return ddp_document_charts(document, source);
  if (kind == "reducers") return reducers_charts(document, source);
  if (document.contains("step") && document.contains("trainers")) {
    return training_charts(document, source);
  }
  if (document.contains("rows")) return rows_charts(document, source);
  throw InvalidArgument(source + " holds results of gradwire-bench " + kind +
                        " without a \"rows\" section, which the report cannot draw (it draws " +
                        known_kinds() + ", and any result with rows)");
}

}  // namespace

const std::vector<std::string>& charted_benchmarks() {
  static const std::vector<std::string> kKinds = {"ddp", "reducers", "every training case"};
  return kKinds;
}

void finish_chart(ChartSpec& chart) {
  chart.x_values.clear();
  for (auto& series : chart.series) {
    std::stable_sort(series.points.begin(), series.points.end(),
                     [](const ChartPoint& a, const ChartPoint& b) { return a.x < b.x; });
    for (const auto& point : series.points) chart.x_values.push_back(point.x);
  }
  std::sort(chart.x_values.begin(), chart.x_values.end());
  chart.x_values.erase(std::unique(chart.x_values.begin(), chart.x_values.end()),
                       chart.x_values.end());
  const bool positive = !chart.x_values.empty() && chart.x_values.front() > 0;
  chart.x_scale = positive && chart.x_values.back() >= kLogScaleMinRatio * chart.x_values.front()
                      ? AxisScale::kLog2
                      : AxisScale::kLinear;
}

std::vector<ChartSpec> charts_from_document(const nlohmann::json& document,
                                            const std::string& source) {
  if (!document.is_object()) throw InvalidArgument(source + " is not a JSON object");
  try {
    std::vector<ChartSpec> charts = charts_of_kind(document, source);
    for (auto& chart : trace_charts(document, source)) charts.push_back(std::move(chart));
    return charts;
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument(source + " has a field of the wrong type (" + e.what() +
                          "): it is not a result the report can draw");
  }
}

nlohmann::json to_json(const ChartSpec& chart) {
  nlohmann::json series = nlohmann::json::array();
  for (const auto& line : chart.series) {
    nlohmann::json points = nlohmann::json::array();
    for (const auto& point : line.points) {
      nlohmann::json entry = {{"x", point.x}, {"y", point.y}};
      if (!point.note.empty()) entry["note"] = point.note;
      points.push_back(std::move(entry));
    }
    series.push_back({{"name", line.name},
                      {"group", line.group},
                      {"dashed", line.dashed},
                      {"points", std::move(points)}});
  }
  nlohmann::json baselines = nlohmann::json::array();
  for (const auto& baseline : chart.baselines) {
    baselines.push_back({{"name", baseline.name}, {"group", baseline.group}, {"y", baseline.y}});
  }
  return {{"kind", chart.kind},
          {"categories", chart.categories},
          {"title", chart.title},
          {"subtitle", chart.subtitle},
          {"x_label", chart.x_label},
          {"y_label", chart.y_label},
          {"x_unit", chart.x_unit},
          {"y_unit", chart.y_unit},
          {"x_scale", chart.x_scale == AxisScale::kLog2 ? "log2" : "linear"},
          {"x_values", chart.x_values},
          {"series", std::move(series)},
          {"baselines", std::move(baselines)}};
}

}  // namespace gradwire::bench
