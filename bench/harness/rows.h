// The rows every case's result document carries besides its own fields: a row is the labels of
// the dimensions it was measured at and the samples measured there, all in one unit. They are
// what `gradwire-bench diff` compares and what `gradwire-bench report` draws for a case that has
// no charts of its own, so a new case gets both by filling a RowSet. Pure.
//
// JSON (the document's "rows"; docs/benchmarks.md):
//   {"unit": "us", "x": "bytes", "chart_by": "op", "dimensions": ["op", "bytes"],
//    "entries": [{"labels": {"op": "allreduce", "bytes": 1048576}, "samples": [496.8, ...]}]}
// Lower samples are better (they are times); a label's value is a string, a number or a bool.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace gradwire::bench {

struct Row {
  nlohmann::json labels = nlohmann::json::object();  // dimension name -> value
  std::vector<double> samples;                       // in RowSet::unit, in measured order
};

struct RowSet {
  std::vector<std::string> dimensions;  // the label names, in the order rows are described
  std::string unit;                     // of every sample: "s", "ms", "us"
  std::string x;         // the numeric label a chart puts on its x axis; empty: the row's order
  std::string chart_by;  // the label whose values get a chart each; empty: one chart
  std::vector<Row> rows;
};

nlohmann::json to_json(const RowSet& rows);

// Reads document["rows"]. Throws InvalidArgument naming `source` when it is missing or malformed.
RowSet parse_row_set(const nlohmann::json& document, const std::string& source);

// Pure: "op allreduce, bytes 1048576": the labels of `row` in the order of `dimensions`, leaving
// out the names in `skip`.
std::string describe_labels(const Row& row, const std::vector<std::string>& dimensions,
                            const std::vector<std::string>& skip = {});

// Pure: -100 * (test - baseline) / baseline, in percent; 0 when baseline is 0 (positive: the
// test took less).
double delta_percent(double baseline, double test);
// Pure: delta_percent as the diffs print it: "+12.3%".
std::string delta_text(double baseline, double test);

// Pure: the rows of `baseline` and `test` matched by their labels, one line each with p50 and p95
// of both and delta% = -100 * (test - baseline) / baseline (positive: the test is faster, as
// `diff` of ddp results); rows present in one set only are named. Throws InvalidArgument when the
// units differ.
void print_rows_diff(std::ostream& out, const RowSet& baseline, const RowSet& test);

}  // namespace gradwire::bench
