// The charts of any result document with a "rows" section (harness/rows.h), for the cases that
// have no charts of their own (collectives, data, and any case added later). Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/charts.h"

namespace gradwire::bench {

// One chart per value of the rows' chart_by label (one chart when there is none), in order of
// first appearance: x = the rows' x label (the row's position in its series when the set names
// none or a value is not a number), y = p50 of the samples (solid) and p90 (dashed), one colour
// per combination of the other labels. Throws InvalidArgument naming `source` when the document
// has no valid rows section (parse_row_set).
std::vector<ChartSpec> rows_charts(const nlohmann::json& document, const std::string& source);

}  // namespace gradwire::bench
