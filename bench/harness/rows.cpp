#include "harness/rows.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "gradwire/common/error.h"
#include "harness/stats.h"
#include "harness/table.h"

namespace gradwire::bench {

namespace {

constexpr int kValueWidth = 11;
constexpr int kDeltaWidth = 8;
constexpr int kDiffPercentiles[] = {50, 95};

std::string label_value(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string cells(const Row& a, const Row& b) {
  std::string text;
  for (const int p : kDiffPercentiles) {
    const double va = percentile(a.samples, p);
    const double vb = percentile(b.samples, p);
    text += "  " + pad_left(format_fixed(va, 4), kValueWidth) + " " +
            pad_left(format_fixed(vb, 4), kValueWidth) + " " +
            pad_left(delta_text(va, vb), kDeltaWidth);
  }
  return text;
}

}  // namespace

nlohmann::json to_json(const RowSet& rows) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& row : rows.rows) {
    entries.push_back({{"labels", row.labels}, {"samples", row.samples}});
  }
  return {{"unit", rows.unit},
          {"x", rows.x},
          {"chart_by", rows.chart_by},
          {"dimensions", rows.dimensions},
          {"entries", entries}};
}

RowSet parse_row_set(const nlohmann::json& document, const std::string& source) {
  const auto found = document.is_object() ? document.find("rows") : document.end();
  if (!document.is_object() || found == document.end() || !found->is_object()) {
    throw InvalidArgument(source +
                          " has no \"rows\" section: it was not written by a "
                          "gradwire-bench that records its rows");
  }
  RowSet rows;
  try {
    rows.unit = found->at("unit").get<std::string>();
    rows.x = found->value("x", std::string());
    rows.chart_by = found->value("chart_by", std::string());
    rows.dimensions = found->at("dimensions").get<std::vector<std::string>>();
    for (const auto& entry : found->at("entries")) {
      Row row{entry.at("labels"), entry.at("samples").get<std::vector<double>>()};
      if (!row.labels.is_object() || row.samples.empty()) {
        throw InvalidArgument(source + ": a row has no labels or no samples");
      }
      rows.rows.push_back(std::move(row));
    }
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument(source + ": \"rows\" has a missing or mistyped field (" + e.what() + ")");
  }
  return rows;
}

std::string describe_labels(const Row& row, const std::vector<std::string>& dimensions,
                            const std::vector<std::string>& skip) {
  std::string text;
  for (const auto& name : dimensions) {
    const auto value = row.labels.find(name);
    if (value == row.labels.end() || std::find(skip.begin(), skip.end(), name) != skip.end()) {
      continue;
    }
    text += (text.empty() ? "" : ", ") + name + " " + label_value(*value);
  }
  return text;
}

double delta_percent(double baseline, double test) {
  if (baseline == 0) return 0;
  // Written as (baseline - test) so that equal values give +0.0, not -0.0.
  return 100.0 * (baseline - test) / baseline;
}

std::string delta_text(double baseline, double test) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", delta_percent(baseline, test));
  return text;
}

void print_rows_diff(std::ostream& out, const RowSet& baseline, const RowSet& test) {
  if (baseline.unit != test.unit) {
    throw InvalidArgument("the rows are in " + baseline.unit + " and " + test.unit +
                          ": compare results of the same benchmark");
  }
  std::map<std::string, const Row*> tests;
  for (const auto& row : test.rows) tests[row.labels.dump()] = &row;
  std::size_t width = 3;
  const auto describe = [&baseline](const Row& row) {
    return describe_labels(row, baseline.dimensions);
  };
  for (const auto& row : baseline.rows) width = std::max(width, describe(row).size());
  for (const auto& row : test.rows) width = std::max(width, describe(row).size());

  std::string header = pad_right("row", static_cast<int>(width));
  for (const int p : kDiffPercentiles) {
    const std::string name = "p" + std::to_string(p) + "(" + baseline.unit + ")";
    header += "  " + pad_left("base " + name, kValueWidth) + " " +
              pad_left("test " + name, kValueWidth) + " " + pad_left("delta%", kDeltaWidth);
  }
  out << "(delta% = -100 * (test - baseline) / baseline: positive means the test is faster)\n"
      << header << "\n";
  for (const auto& row : baseline.rows) {
    const std::string label = pad_right(describe(row), static_cast<int>(width));
    const auto match = tests.find(row.labels.dump());
    if (match == tests.end()) {
      out << label << "  (only in baseline)\n";
      continue;
    }
    out << label << cells(row, *match->second) << "\n";
    tests.erase(match);
  }
  for (const auto& row : test.rows) {
    if (tests.count(row.labels.dump()) != 0) {
      out << pad_right(describe(row), static_cast<int>(width)) << "  (only in test)\n";
    }
  }
  out << std::flush;
}

}  // namespace gradwire::bench
