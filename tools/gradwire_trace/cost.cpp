// gradwire-trace cost: what one recording call costs, with the timeline off and on
// (docs/timeline.md, "The cost"). A measurement program, not a test: it prints nanoseconds per
// call and writes them as JSON; the training benchmarks' side-by-side figures are
// scripts/timeline_overhead.py's.
#include "cost.h"

#include <time.h>
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
      {"async_span, 2 args", 2,
       [](uint64_t i) {
         const int64_t start = timeline::now_ns();
         timeline::async_span("lookup server 3", "ps", start, start + 1000, {{"bytes_sent", i}},
                              {{"bytes_received", i}});
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

int64_t process_cpu_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

struct OnCost {
  double thread_ns = 0;  // per call, on the recording thread
  double cpu_ns = 0;     // per call, the process's CPU: recording and writing
};

// A record's bytes, about (docs/timeline.md, The files): what sizes a burst below.
constexpr uint64_t kRecordBytes = 112;

// With a timeline writing `file`: `calls` calls in bursts of half a chunk of records, each
// followed by a flush() (untimed on the thread), so that the recording thread's figure is that of
// a writer that keeps up; the CPU figure includes the flushes' writing.
OnCost time_calls_on(const CostCall& call, uint64_t calls, const std::string& file) {
  const timeline::StartOptions start_options;
  const uint64_t burst = std::max<uint64_t>(1, start_options.chunk_bytes / kRecordBytes / 2 /
                                                   static_cast<uint64_t>(call.events_per_call));
  const int64_t cpu_start = process_cpu_ns();
  timeline::start(file, "gradwire-trace cost", start_options);
  int64_t thread_ns = 0;
  for (uint64_t done = 0; done < calls;) {
    const uint64_t n = std::min(burst, calls - done);
    const int64_t start = timeline::now_ns();
    for (uint64_t i = 0; i < n; ++i) call.call(done + i);
    thread_ns += timeline::now_ns() - start;
    done += n;
    timeline::flush();
  }
  timeline::stop();
  const double count = static_cast<double>(calls);
  return {static_cast<double>(thread_ns) / count,
          static_cast<double>(process_cpu_ns() - cpu_start) / count};
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
  std::printf("%-26s %8s %10s %10s %12s %12s\n", "call", "off ns", "on ns", "on cpu ns",
              "on ns/event", "cpu ns/event");
  for (const CostCall& call : cost_calls()) {
    std::vector<double> off, on, on_cpu;
    for (int run = 0; run < options.runs; ++run) {
      off.push_back(time_calls(call, options.calls));
      const OnCost cost = time_calls_on(call, options.calls, file);
      on.push_back(cost.thread_ns);
      on_cpu.push_back(cost.cpu_ns);
    }
    const double off_ns = median(off);
    const double on_ns = median(on);
    const double cpu_ns = median(on_cpu);
    std::printf("%-26s %8.2f %10.1f %10.1f %12.1f %12.1f\n", call.name, off_ns, on_ns, cpu_ns,
                on_ns / call.events_per_call, cpu_ns / call.events_per_call);
    rows.push_back({{"call", call.name},
                    {"events_per_call", call.events_per_call},
                    {"off_ns", off_ns},
                    {"on_ns", on_ns},
                    {"on_cpu_ns", cpu_ns}});
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
