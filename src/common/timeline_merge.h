// The timeline merge (pure but for reading and writing files): the timeline files of a job's
// processes (gradwire/common/timeline.h, docs/timeline.md) joined into one Chrome trace. Internal
// to gradwire ("common/timeline_merge.h"): gradwire-trace merge and the launcher
// (LaunchOptions::timeline) use it.
//
// Each process file is a sequence of binary records (timeline_record.h, Note [timeline records])
// that ends with an end record when the process stopped its timeline. A process killed before
// stopping leaves no end record, and maybe a last record cut in the middle: it is dropped and
// counted. Merge also reads Chrome traces in JSON (an array or {"traceEvents": [...]}, whole or,
// one event per line, cut), such as gradwire's process files before 2026-11-29.
// Merging puts every file on the job's clock (the last "gradwire_clock" metadata of the file:
// its offset_ns is added to its timestamps), starts the trace at 0, gives each file a pid of its
// own (ranks first by rank, then servers by index, then the others by label), renumbers async
// ids per process so that processes cannot share one, and keeps thread ids.
//
// Thread safety: no shared state; every function may be called from any thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gradwire::timeline {

// One process file as read.
struct ProcessTrace {
  std::string source;     // the file (or a test's name)
  std::string label;      // its process_name ("rank 3"), else the file's name
  int64_t offset_ns = 0;  // its last gradwire_clock offset (0 without one)
  bool has_clock = false;
  bool closed = false;                 // ended whole: the process stopped its timeline
  size_t dropped_lines = 0;            // records or lines that did not parse (a cut last one)
  std::vector<nlohmann::json> events;  // in file order; gradwire_clock metadata removed
};

// Parses a process file's bytes (binary records, or JSON). What does not parse is counted in
// dropped_lines (a killed process's last record or line); `source` names the file in the result.
// Never throws for bad content.
ProcessTrace parse_process_trace(const std::string& text, const std::string& source);

// Reads and parses a file; gradwire::Error naming it when it cannot be read.
ProcessTrace read_process_trace(const std::string& path);

// Whether a folder's file is one to merge: a process file (*.gwtl) or a JSON trace (*.json).
bool is_trace_file_name(const std::string& path);

// The files to merge: the arguments, with each folder replaced by the files in it that
// is_trace_file_name takes (sorted).
std::vector<std::string> list_trace_files(const std::vector<std::string>& paths);

// Where a process goes in the merged trace: ranks by rank ("rank 3"), then the parameter servers
// by index ("ps server 2"; a process hosting several, "ps servers 4-7", by its first), then the
// others by label.
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

// A file that merge_files read but that was not whole.
struct IncompleteFile {
  std::string file;
  std::string label;
  bool closed = false;       // false: the process did not stop its timeline (killed?)
  size_t dropped_lines = 0;  // lines cut in the middle
};

// What merge_files did.
struct MergeReport {
  MergeSummary summary;
  std::vector<IncompleteFile> incomplete;  // in the order of `files`
};

// "FILE (LABEL) was not closed (the process was killed?), a cut line dropped".
std::string describe(const IncompleteFile& file);

// The merged trace: {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}} with
// pids 1..N in process_order, process_name and process_sort_index metadata for each.
nlohmann::json merge_traces(std::vector<ProcessTrace> processes, MergeSummary* summary = nullptr);

// Reads `files`, merges them and writes the trace to `out` (its folder created; written
// atomically: a reader sees the old file or the whole new one). Streams: the events of binary
// files are written as they are decoded, never all held (Note [streaming merge]); what
// merge_traces would write for the same files, timestamps exact to the nanosecond. Throws gradwire::Error naming the
// file when one cannot be read, or `out` cannot be written.
MergeReport merge_files(const std::vector<std::string>& files, const std::string& out);

}  // namespace gradwire::timeline
