// The plotted HTML report of benchmark results: documents -> charts (charts.h) and facts about
// each run -> one self-contained page (html_page.h) -> a file. `gradwire-bench report` is built on
// these, and any subcommand can write its page next to its JSON with write_html_report.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/html_page.h"

namespace gradwire::bench {

inline constexpr const char* kDefaultReportTitle = "gradwire-bench report";

// A document and what to call it on the page and in messages (its file path).
struct ReportInput {
  std::string source;
  nlohmann::json document;
};

// Pure: what the page says about a document: benchmark (and implementation), versions, backend,
// ranks and threads, host, CPU, date, command line, settings and embedded reference, each only
// when the document has it. Reads the harness "metadata" first, then the top-level fields that
// files without it have (PyTorch's benchmark.py, the reference script).
ReportSource describe_document(const nlohmann::json& document, const std::string& source);

// Pure: the page for `inputs`, charts in input order. Throws gradwire::InvalidArgument naming the
// source of a document the report cannot draw (charts_from_document).
ReportPage build_report_page(const std::vector<ReportInput>& inputs, const std::string& title);

// Reads a result file as JSON; what kind of result it is, build_report_page checks. Throws
// gradwire::Error naming the path when it cannot be read or is not JSON.
ReportInput read_report_input(const std::string& path);

// For subcommands: draws `documents` (as written by their --json, e.g. gradwire-bench ddp's or
// reducers') into a page titled `title` and writes it to `path` (write_text_file: never half a
// page). The documents are named "gradwire-bench <benchmark>" on the page, numbered when there are
// several. Throws InvalidArgument for a document the report cannot draw, Error when the file cannot
// be written. Blocks for the file write only.
void write_html_report(const std::string& path, const std::vector<nlohmann::json>& documents,
                       const std::string& title = kDefaultReportTitle);

// A case's result files: `document` to `json_path`, then its page (write_html_report, titled
// "gradwire-bench <benchmark>") to `html_path`, each only when its path is not empty; the page
// after the JSON, so a page that cannot be drawn never costs the results. `progress` gets
// "wrote PATH" after each. Throws as write_json_file and write_html_report.
void write_result_files(const std::string& json_path, const std::string& html_path,
                        const nlohmann::json& document,
                        const std::function<void(const std::string&)>& progress);

}  // namespace gradwire::bench
