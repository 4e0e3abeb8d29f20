// The HTML page of `gradwire-bench hybrid --html`: charts of a hybrid result document (as
// hybrid_document writes it, with or without its embedded PyTorch reference) drawn by the same
// page and renderer as `gradwire-bench report` (bench/report/html_page.h). Pure, except
// write_hybrid_html.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/charts.h"

namespace gradwire::bench {

// Three charts: "ex/sec of all trainers" (x = percentile 50/75/90/95; one series per
// implementation), "sec/epoch by epoch" (one series per trainer and implementation, the
// reference's dashed) and "phases by trainer" (ms per epoch; one series per phase and
// implementation). Throws InvalidArgument naming `source` when the document is not a hybrid
// result (parse_hybrid_result).
std::vector<ChartSpec> hybrid_charts(const nlohmann::json& document, const std::string& source);

// Writes the page for `document` to `path` (through a temporary file). Throws InvalidArgument for
// a document that is not a hybrid result and gradwire::Error when the file cannot be written.
void write_hybrid_html(const std::string& path, const nlohmann::json& document);

}  // namespace gradwire::bench
