// `gradwire-bench ddp --trace DIR` (ddp_trace.h).
#include "cases/ddp_trace.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "harness/report.h"
#include "harness/traces.h"
#include "report/html_report.h"

namespace gradwire::bench {

std::string ddp_trace_name(const DdpSettings& settings) {
  const std::string& hook = settings.comm_hooks.front();
  const int size = settings.world_sizes.back();  // ascending
  return "ddp-" + settings.models.front() + "-" + settings.backends.front() +
         (hook == "allreduce" ? "" : "+" + hook) + "-" + std::to_string(size) +
         (size == 1 ? "rank" : "ranks");
}

void add_ddp_trace(const DdpSettings& settings, const std::string& name, const std::string& path) {
  const auto progress = [](const std::string& line) {
    std::cerr << "gradwire-bench ddp: " << line << std::endl;
  };
  const nlohmann::json entry = read_trace_entry(name, path, 1);
  progress("wrote the trace " + path);
  const nlohmann::json traces = nlohmann::json::array({entry});
  print_trace_entries(std::cout, traces);
  if (settings.json_path.empty()) return;
  nlohmann::json document = read_json_file(settings.json_path);
  document["traces"] = traces;
  write_result_files(settings.json_path, settings.html_path, document, progress);
}

}  // namespace gradwire::bench
