// The HTML page of `gradwire-bench report`: one self-contained file (inline CSS, inline script,
// no external resources; its Content-Security-Policy forbids loading any) with a title, a block
// of facts about each input document, and the charts. The charts travel as JSON in a
// <script type="application/json" id="chart-data"> element and are drawn as inline SVG by the
// embedded renderer, bench/report/charts.js, which then sets on <body>:
//   data-charts-drawn="N"  charts drawn         data-points-drawn="M"  points (markers) drawn
//   data-chart-error="..." only when drawing failed; the page then shows a red error box.
// <body data-charts-expected="N"> says how many charts the data holds. Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/charts.h"

namespace gradwire::bench {

// Facts about one input document, shown above the charts.
struct ReportSource {
  std::string name;                                        // the file, or what the document is
  std::vector<std::pair<std::string, std::string>> facts;  // (label, value) in display order
  // (label, target) drawn as links after the facts: the traces of --trace, by their paths.
  std::vector<std::pair<std::string, std::string>> links;
};

struct ReportPage {
  std::string title;
  std::vector<ReportSource> sources;
  std::vector<ChartSpec> charts;
};

// The whole page, as UTF-8 text.
std::string render_html_page(const ReportPage& page);

// `text` with &, <, >, " and ' replaced by character references: safe as HTML text and as a
// quoted attribute value.
std::string escape_html(const std::string& text);

// `data` as JSON that is safe inside a <script> element: every <, > and & is written as the
// JSON escape \u003c, \u003e, \u0026, so no string in the data can end the element ("</script")
// or open a comment ("<!--"); JSON.parse reads back the original strings. Invalid UTF-8 in
// strings becomes U+FFFD instead of throwing.
std::string json_for_script(const nlohmann::json& data);

// The chart renderer, bench/report/charts.js, embedded at build time (chart_script.cpp.in).
std::string_view chart_script();

}  // namespace gradwire::bench
