// gradwire-trace: the timelines of a job's processes (docs/timeline.md).
//
//   gradwire-trace merge OUT FILE|DIR...
//       joins the process files (GRADWIRE_TIMELINE=trace.json writes them to trace.json.d/) into
//       one trace OUT that Perfetto and chrome://tracing open, each process on the job's clock.
//   gradwire-trace dump FILE
//       prints the events of one process file (*.gwtl: binary) as JSON, one object a line, on the
//       process's own clock, metadata included.
//   gradwire-trace cost [--calls N] [--runs R] [--json PATH]
//       measures what one recording call costs with the timeline off and on (nanoseconds).
//
// Exit status: 0 on success (files of killed processes included: their unclosed arrays and cut
// last lines are reported); 1 when a file cannot be read or no file is given; 2 for usage errors.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/timeline_merge.h"
#include "common/timeline_record.h"
#include "cost.h"
#include "gradwire/common/error.h"

namespace {

int run_merge(const std::string& out, const std::vector<std::string>& inputs) {
  const std::vector<std::string> files = gradwire::timeline::list_trace_files(inputs);
  if (files.empty()) {
    std::fprintf(stderr, "gradwire-trace: no *.gwtl or *.json files in %s\n",
                 inputs.front().c_str());
    return 1;
  }
  const gradwire::timeline::MergeReport report = gradwire::timeline::merge_files(files, out);
  for (const gradwire::timeline::IncompleteFile& file : report.incomplete) {
    std::fprintf(stderr, "gradwire-trace: %s\n", gradwire::timeline::describe(file).c_str());
  }
  std::printf("wrote %s: %zu processes, %zu events\n", out.c_str(), report.summary.processes,
              report.summary.events);
  return 0;
}

int run_dump(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "gradwire-trace: cannot read %s\n", file.c_str());
    return 1;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!gradwire::timeline::is_process_file(bytes)) {
    std::fprintf(stderr, "gradwire-trace: %s is not a timeline process file (*.gwtl)\n",
                 file.c_str());
    return 1;
  }
  const gradwire::timeline::DecodedFile decoded = gradwire::timeline::decode_process_file(bytes);
  for (const nlohmann::json& event : decoded.events) std::printf("%s\n", event.dump().c_str());
  if (!decoded.closed) {
    std::fprintf(stderr, "gradwire-trace: %s was not closed (the process was killed?)%s\n",
                 file.c_str(), decoded.dropped > 0 ? ", a cut record dropped" : "");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gradwire-trace: the timelines of a job's processes (docs/timeline.md)"};
  app.require_subcommand(1);
  std::string out;
  std::vector<std::string> inputs;
  CLI::App* merge = app.add_subcommand(
      "merge", "Join process timeline files (or folders of them) into one Chrome trace");
  merge->add_option("OUT", out, "The merged trace to write (JSON)")->required();
  merge->add_option("INPUTS", inputs, "Process files, or folders of them (*.gwtl, *.json)")
      ->required();
  std::string dump_file;
  CLI::App* dump = app.add_subcommand("dump", "Print one process file's events as JSON lines");
  dump->add_option("FILE", dump_file, "A process file (*.gwtl)")->required();
  gradwire::trace_tool::CostOptions cost_options;
  CLI::App* cost = app.add_subcommand(
      "cost", "Measure what one recording call costs with the timeline off and on");
  cost->add_option("--calls", cost_options.calls, "calls per run of each kind [1000000]")
      ->check(CLI::PositiveNumber);
  cost->add_option("--runs", cost_options.runs, "runs of each kind; the median counts [5]")
      ->check(CLI::PositiveNumber);
  cost->add_option("--json", cost_options.json_path, "write the figures to this JSON file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;
  }
  try {
    if (cost->parsed()) return gradwire::trace_tool::run_cost(cost_options);
    if (dump->parsed()) return run_dump(dump_file);
    return run_merge(out, inputs);
  } catch (const gradwire::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
