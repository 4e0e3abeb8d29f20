// Chart specifications drawn by `gradwire-bench report`: what a line chart shows (title, axes,
// named series of points, horizontal baselines; or stacked bars, for traces), independent of how
// it is drawn, and how a benchmark result document becomes charts. Pure; the page (html_page.h)
// serialises these with to_json and its embedded script (charts.js) draws them.
//
// Documents read: "reducers", with charts of its own; every training case's document
// (training_charts); "ddp" (gradwire-bench ddp --json, the reference script's, and PyTorch's own
// benchmark.py --json, recognised by benchmark_results without schema_version) through the rows
// of its benchmark_results (ddp_rows); and any other gradwire-bench result through its "rows"
// section (rows_charts). docs/benchmarks.md lists the
// charts of each.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gradwire::bench {

struct RowSet;  // harness/rows.h

// How the x axis maps values to positions.
enum class AxisScale {
  kLinear,
  kLog2,  // equal distances for doublings: world sizes 1, 2, 4, 8, ...
};

struct ChartPoint {
  double x = 0;
  double y = 0;
  std::string note;  // extra text for the point's tooltip ("9 buckets"); may be empty
};

// One line of points. Series of the same `group` share a colour (e.g. "gradwire" p50 and p90);
// `dashed` tells a secondary statistic apart from the main one.
struct ChartSeries {
  std::string name;  // legend text, e.g. "gradwire p50"
  std::string group;
  bool dashed = false;
  std::vector<ChartPoint> points;  // sorted by x
};

// A horizontal line across the chart, e.g. the "no ddp" baseline; coloured by `group`.
struct ChartBaseline {
  std::string name;
  std::string group;
  double y = 0;
};

struct ChartSpec {
  std::string title;
  std::string subtitle;  // where the data comes from (file, implementations)
  std::string x_label;
  std::string y_label;
  std::string x_unit;  // for tooltips: "ranks", "MiB"
  std::string y_unit;  // for tooltips: "s", "ms"
  AxisScale x_scale = AxisScale::kLinear;
  std::vector<double> x_values;  // every x of every series, sorted, unique: the axis ticks
  std::vector<ChartSeries> series;
  std::vector<ChartBaseline> baselines;
  // "lines", or "stacked_bars": one bar per entry of `categories` (a point's x is the bar's index),
  // one segment per series, stacked in series order (trace_charts).
  std::string kind = "lines";
  std::vector<std::string> categories;
};

// Pure: fills `x_values` from the series (sorted, unique), sorts each series' points by x, and
// picks the x scale: kLog2 when every x is positive and the largest is at least 4 times the
// smallest, else kLinear. Call after adding the series.
void finish_chart(ChartSpec& chart);

// Pure: the charts of one document, in the order of its results. `source` names the document in
// titles and messages (a file path). Throws gradwire::InvalidArgument naming `source` when the
// document is not an object, has a schema_version other than kSchemaVersion, is of a benchmark
// that has no charts of its own and no "rows" section, or lacks a field the charts need.
std::vector<ChartSpec> charts_from_document(const nlohmann::json& document,
                                            const std::string& source);

// The benchmark kinds with charts of their own, for messages and docs.
const std::vector<std::string>& charted_benchmarks();

// What the page's script reads (field names as in the structs; x_scale "linear" or "log2").
nlohmann::json to_json(const ChartSpec& chart);

// The charts of each kind of document (report/<kind>_charts.cpp), which charts_from_document
// picks. Pure; each throws InvalidArgument naming `source` when the document lacks a field it
// needs or has one of the wrong type.
//
// reducers: "forward" then "backward" latency against x = bucket cap in MiB
// (DdpOptions::bucket_cap_mb), y = ms: per reducer (in order of first appearance) "<reducer> p50"
// (solid) and "<reducer> mean" (dashed) of the "forward_ms" / "backward_ms" summaries of
// "results": [{"bucket_size_mb", "reducers": [{"reducer", "buckets", "forward_ms",
// "backward_ms"}]}]; each point's note gives the bucket count when the document has it. The
// titles name the model, batch size and world size from "settings" when present.
std::vector<ChartSpec> reducers_charts(const nlohmann::json& document, const std::string& source);
// A training case's document (cases/training_case.h: "step", "phases" and "trainers"; hybrid, ps)
// with its comparisons ("compare") and embedded PyTorch reference (dashed): "imgs/s by pass" (when
// it has "steps_per_pass"; reference 003's Pass lines; one series per side), "ex/sec of all
// trainers" (x = percentile 50/75/90/95 of the step time; one series per side), "<step time> by
// <step>" (one series per trainer and side) and "phases by trainer (mean per <step>)" (one series
// per phase a side records and side); parse_trainer_results' errors.
std::vector<ChartSpec> training_charts(const nlohmann::json& document, const std::string& source);
// Any other document, through its "rows" (harness/rows.h): one chart per value of the rows'
// chart_by label (one chart when there is none), in order of first appearance: x = the rows' x
// label (the row's position in its series when the set names none or a value is not a number),
// y = p50 of the samples (solid) and p90 (dashed), one colour per combination of the other
// labels; a row without the x label (when the set names one) is a baseline at its p50 instead
// (ddp's "no ddp"); parse_row_set's errors.
std::vector<ChartSpec> rows_charts(const nlohmann::json& document, const std::string& source);
// The same of rows already read, titled `title` (the benchmark). ddp's documents (gradwire-bench
// ddp, the reference script, PyTorch's benchmark.py) are drawn this way from their ddp_rows
// (cases/ddp_results.h): one chart per model, sec/iter against the world size, one colour per
// implementation and configuration, the "no ddp" baseline a line.
std::vector<ChartSpec> rows_charts(const RowSet& rows, const std::string& title,
                                   const std::string& source);
// Any document with "traces" (--trace; harness/traces.h), after its own charts: per trace with a
// summary, "where the time went" as stacked bars of ms per traced step (per window when a rank
// counted no steps), one bar per rank: compute that hid no communication, compute that hid
// communication, exposed communication, waits, other; and, when it has servers, one bar per
// server: busy and idle ms. Entries without a summary draw nothing; InvalidArgument naming
// `source` for a summary that cannot be read.
std::vector<ChartSpec> trace_charts(const nlohmann::json& document, const std::string& source);

}  // namespace gradwire::bench
