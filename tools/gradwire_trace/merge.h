// gradwire-trace's merge (pure but for reading files): the timeline files of a job's processes
// (gradwire/common/timeline.h, docs/timeline.md) joined into one Chrome trace.
//
// Each process file is a JSON array of trace events, one event per line ("[{...}", ",{...}",
// then "]" when the process stopped its timeline). A process killed before stopping leaves the
// array unclosed, and maybe a last line cut in the middle: that line is dropped and counted.
// Merging puts every file on the job's clock (the last "gradwire_clock" metadata of the file:
// its offset_ns is added to its timestamps), starts the trace at 0, gives each file a pid of its
// own (ranks first by rank, then servers by index, then the others by label), renumbers async
// ids per process so that processes cannot share one, and keeps thread ids.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gradwire::trace {

// One process file as read.
struct ProcessTrace {
  std::string source;     // the file (or a test's name)
  std::string label;      // its process_name ("rank 3"), else the file's name
  int64_t offset_ns = 0;  // its last gradwire_clock offset (0 without one)
  bool has_clock = false;
  bool closed = false;                 // ended with "]": the process stopped its timeline
  size_t dropped_lines = 0;            // lines that did not parse (a cut last line)
  std::vector<nlohmann::json> events;  // in file order; gradwire_clock metadata removed
};

// Parses a process file's text. Lines that do not parse are counted in dropped_lines (a killed
// process's last line); `source` names the file in the result. Never throws for bad content.
ProcessTrace parse_process_trace(const std::string& text, const std::string& source);

// Reads and parses a file; gradwire::Error naming it when it cannot be read.
ProcessTrace read_process_trace(const std::string& path);

// The files to merge: the arguments, with each folder replaced by its *.json files (sorted).
std::vector<std::string> list_trace_files(const std::vector<std::string>& paths);

// Where a process goes in the merged trace: ranks by rank, then servers, then by label.
struct ProcessOrder {
  int group = 2;  // 0 rank, 1 ps server, 2 other
  int64_t index = 0;
  std::string label;
  bool operator<(const ProcessOrder& other) const;
};
ProcessOrder process_order(const std::string& label);

struct MergeSummary {
  size_t processes = 0;
  size_t events = 0;
  size_t unclosed = 0;  // files of processes that did not stop their timeline
  size_t dropped_lines = 0;
};

// The merged trace: {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}} with
// pids 1..N in process_order, process_name and process_sort_index metadata for each.
nlohmann::json merge_traces(std::vector<ProcessTrace> processes, MergeSummary* summary = nullptr);

}  // namespace gradwire::trace
