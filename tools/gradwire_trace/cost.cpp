// gradwire-trace cost: what one recording call costs, with the timeline off and on
// (docs/timeline.md, "The cost"). A measurement program, not a test: it prints nanoseconds per
// call and writes them as JSON; the training benchmarks' side-by-side figures are
// scripts/timeline_overhead.py's.
#include "cost.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gradwire/common/timeline.h"

namespace gradwire::trace_tool {
namespace {

namespace timeline = gradwire::timeline;

struct CostCall {
  const char* name;
  int events_per_call;
  std::function<void(uint64_t)> call;
};

std::vector<CostCall> cost_calls() {
  return {
      {"Span, 2 args", 1,
       [](uint64_t i) {
         timeline::Span span("serve Batch", "ps", {{"bytes", i}, {"transport", "grpc"}});
       }},
      {"AsyncSpan, begin and end", 2,
       [](uint64_t i) {
         timeline::AsyncSpan span("bucket 0", "ddp", {{"bytes", i}});
         span.end({{"algorithm", "ring"}});
       }},
      {"instant, 1 arg", 1,
       [](uint64_t i) { timeline::instant("restart", "launch", {{"incarnation", i}}); }},
      {"counter, 1 series", 1,
       [](uint64_t i) { timeline::counter("pending bytes", {{"bytes", i}}); }},
  };
}

// Nanoseconds per call of `call` over `calls` calls.
double time_calls(const CostCall& call, uint64_t calls) {
  const int64_t start = timeline::now_ns();
  for (uint64_t i = 0; i < calls; ++i) call.call(i);
  return static_cast<double>(timeline::now_ns() - start) / static_cast<double>(calls);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int run_cost(const CostOptions& options) {
  timeline::stop();
  const std::string dir = std::filesystem::temp_directory_path().string() +
                          "/gradwire-trace-cost-" + std::to_string(::getpid());
  const std::string file = dir + "/cost.json";
  nlohmann::json rows = nlohmann::json::array();
  std::printf("timeline cost per recording call (median of %d runs of %llu calls; on: written to "
              "a file in %s)\n\n",
              options.runs, static_cast<unsigned long long>(options.calls), dir.c_str());
  std::printf("%-26s %10s %10s %14s\n", "call", "off ns", "on ns", "on ns/event");
  for (const CostCall& call : cost_calls()) {
    std::vector<double> off, on;
    for (int run = 0; run < options.runs; ++run) {
      off.push_back(time_calls(call, options.calls));
      timeline::start(file, "gradwire-trace cost");
      on.push_back(time_calls(call, options.calls));
      timeline::stop();  // the last chunks' writes are not in the figure; the others' are
    }
    const double off_ns = median(off);
    const double on_ns = median(on);
    std::printf("%-26s %10.2f %10.1f %14.1f\n", call.name, off_ns, on_ns,
                on_ns / call.events_per_call);
    rows.push_back({{"call", call.name},
                    {"events_per_call", call.events_per_call},
                    {"off_ns", off_ns},
                    {"on_ns", on_ns}});
  }
  std::filesystem::remove_all(dir);
  if (!options.json_path.empty()) {
    std::ofstream out(options.json_path);
    out << nlohmann::json{{"benchmark", "timeline cost"},
                          {"runs", options.runs},
                          {"calls", options.calls},
                          {"rows", rows}}
               .dump(1)
        << "\n";
    if (!out) {
      std::fprintf(stderr, "gradwire-trace: cannot write %s\n", options.json_path.c_str());
      return 1;
    }
    std::printf("\nwrote %s\n", options.json_path.c_str());
  }
  return 0;
}

}  // namespace gradwire::trace_tool
