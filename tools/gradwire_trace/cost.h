// gradwire-trace cost: nanoseconds per timeline recording call, off and on (docs/timeline.md).
#pragma once

#include <cstdint>
#include <string>

namespace gradwire::trace_tool {

struct CostOptions {
  // Calls per run of each kind of call.
  uint64_t calls = 1'000'000;
  // Runs of each kind, off and on alternating; the median is printed.
  int runs = 5;
  // Where to write the figures as JSON; empty: nowhere.
  std::string json_path;
};

// Measures and prints the table; 0, or 1 when the JSON cannot be written. Stops any timeline of
// this process first, and records into a temporary file it removes.
int run_cost(const CostOptions& options);

}  // namespace gradwire::trace_tool
