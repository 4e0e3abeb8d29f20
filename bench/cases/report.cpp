// `gradwire-bench report RESULT.json... --html OUT.html [--title TEXT]`: draws benchmark results
// (any subcommand's --json, and PyTorch's benchmark.py's; docs/benchmarks.md) into one
// self-contained HTML page with charts, which any browser opens offline. Reads every file first, so
// a bad one leaves no page behind.
#include "harness/report.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>

#include "harness/traces.h"
#include "report/html_report.h"
#include "subcommand.h"

namespace gradwire::bench {

Subcommand report_subcommand() {
  return {
      "report", "draw benchmark results (any --json file) as charts in one offline HTML page",
      [](CLI::App& command) -> SubcommandRun {
        struct Options {
          std::vector<std::string> files;
          std::string html;
          std::string title = kDefaultReportTitle;
        };
        auto options = std::make_shared<Options>();
        command.add_option("files", options->files, "result files (JSON) to draw, in page order")
            ->required()
            ->check(CLI::ExistingFile);
        command.add_option("--html", options->html, "the page to write (replaced when it exists)")
            ->required();
        command.add_option("--title", options->title, "the page's title")->capture_default_str();
        return [options](const std::vector<std::string>&) {
          prepare_output_file(options->html);
          std::vector<ReportInput> inputs;
          for (const auto& file : options->files) inputs.push_back(read_report_input(file));
          const ReportPage page = build_report_page(inputs, options->title);
          write_text_file(options->html, render_html_page(page));
          std::cout << "wrote " << page.charts.size()
                    << (page.charts.size() == 1 ? " chart" : " charts") << " from " << inputs.size()
                    << (inputs.size() == 1 ? " file" : " files") << " to " << options->html
                    << "\nopen file://"
                    << std::filesystem::absolute(options->html).lexically_normal().string()
                    << " in a browser (it works offline)" << std::endl;
          // The traces' per-rank summaries (--trace) as tables too.
          for (const auto& input : inputs) {
            if (input.document.is_object() && input.document.contains("traces")) {
              std::cout << "\n" << input.source << ":";
              print_trace_entries(std::cout, input.document["traces"]);
            }
          }
          return 0;
        };
      }};
}

}  // namespace gradwire::bench
