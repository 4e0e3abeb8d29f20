// The traces `--trace DIR` records (docs/benchmarks.md, "--trace"): where a job's merged trace
// goes, and the entry of the results' "traces" array that links it and summarizes it per rank
// (harness/trace_summary.h).
//
// An entry: {"name": "hybrid-gradwire-2x8", "path": "DIR/hybrid-gradwire-2x8.json",
// "repeat": 1, "summary": {...}} or, when the trace could not be read, "error" instead of
// "summary".
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace gradwire::bench {

// Pure: "DIR/NAME.json".
std::string trace_file(const std::string& dir, const std::string& name);

// Creates DIR (and its parents) when missing; gradwire::Error naming it when it cannot.
void prepare_trace_dir(const std::string& dir);

// Reads the merged trace at `path` and summarizes it: the entry above. Never throws: a trace
// that cannot be read or summarized gives an entry with "error".
nlohmann::json read_trace_entry(const std::string& name, const std::string& path, int repeat);

// Prints each entry of `traces` (an array of entries; anything else prints nothing): its path and
// its summary table (print_trace_summary), or its error.
void print_trace_entries(std::ostream& out, const nlohmann::json& traces);

}  // namespace gradwire::bench
