// Where a traced run's time went, per rank (and per parameter server), from a merged timeline
// (docs/timeline.md, "Merging"; docs/benchmarks.md, "--trace" defines each figure). Pure: a
// merged trace's JSON in, figures out. Every figure is the length of a union of intervals (never
// a sum of overlapping spans), clipped to the rank's window.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace gradwire::bench {

// A half-open interval of trace time, microseconds.
struct TraceInterval {
  double begin_us = 0;
  double end_us = 0;
};
// Sorted, disjoint, non-empty intervals (what trace_union returns).
using TraceIntervals = std::vector<TraceInterval>;

// Pure interval arithmetic on unions.
TraceIntervals trace_union(TraceIntervals intervals);
TraceIntervals trace_intersect(const TraceIntervals& a, const TraceIntervals& b);
TraceIntervals trace_subtract(const TraceIntervals& a, const TraceIntervals& b);
double trace_length_us(const TraceIntervals& intervals);

// One rank's figures, in seconds, over its window (its training thread's first to last span).
struct RankTimeSummary {
  std::string process;  // "rank 0"
  int rank = 0;
  int steps = 0;  // "forward" spans of its training thread (0: the thread records none)
  // "forward/backward": compute is forward and backward; "window": the thread records neither
  // (ps's dense trainers), so compute is the window less the rest.
  std::string compute_from;
  double window_s = 0;
  double compute_s = 0;
  double exposed_s = 0;  // communication the training thread waits for
  double hidden_s = 0;   // communication overlapped by the rank's compute
  double waits_s = 0;    // data waits and other waits of the training thread
  double other_s = 0;    // window - compute - exposed - waits (optimizer, bookkeeping, gaps)
};

// One parameter-server process: busy = the union of its threads' spans but waits.
struct ServerTimeSummary {
  std::string process;  // "ps server 0", "ps servers 0-1"
  double window_s = 0;
  double busy_s = 0;
  int calls = 0;  // its spans of category "ps"
};

struct TraceSummary {
  std::vector<RankTimeSummary> ranks;      // by rank
  std::vector<ServerTimeSummary> servers;  // in trace order
};

// The summary of a merged trace ({"traceEvents": [...]}, as gradwire-trace merge writes it).
// Processes are named by their process_name metadata; events of processes that are neither a
// rank nor a server are ignored, and so are ranks that recorded no span. Throws gradwire::InvalidArgument naming `source` when the trace
// has no traceEvents array.
TraceSummary summarize_trace(const nlohmann::json& trace, const std::string& source);

nlohmann::json to_json(const TraceSummary& summary);
// Reads what to_json wrote; InvalidArgument naming `source` when a field is missing or mistyped.
TraceSummary trace_summary_from_json(const nlohmann::json& json, const std::string& source);

// The summary as a text table under `title`: per rank ms per traced step (per window when it
// counted no steps) of compute, exposed, hidden, waits and other, then the servers' busy time.
void print_trace_summary(std::ostream& out, const TraceSummary& summary, const std::string& title);

}  // namespace gradwire::bench
