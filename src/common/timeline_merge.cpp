// The timeline merge (timeline_merge.h).
#include "timeline_merge.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "common/timeline_record.h"
#include "gradwire/common/error.h"
#include "gradwire/common/files.h"

namespace gradwire::timeline {

namespace {

constexpr const char* kMergeClockEvent = "gradwire_clock";
// Async ids are renumbered as pid * kMergeIdsPerProcess + id (below 2^53 for JavaScript's numbers).
constexpr uint64_t kMergeIdsPerProcess = uint64_t{1} << 32;

bool is_merge_metadata(const nlohmann::json& event, const char* name) {
  const auto is = [&](const char* key, const char* value) {
    const auto found = event.find(key);
    return found != event.end() && found->is_string() && found->get<std::string>() == value;
  };
  return event.is_object() && is("ph", "M") && is("name", name);
}

// Takes one parsed event into `trace` (its clock and label noted).
void take_merge_event(ProcessTrace& trace, nlohmann::json event) {
  if (!event.is_object()) {
    trace.dropped_lines++;
    return;
  }
  if (is_merge_metadata(event, kMergeClockEvent)) {
    const nlohmann::json& args = event["args"];
    if (args.is_object() && args.contains("offset_ns") && args["offset_ns"].is_number()) {
      trace.offset_ns = args["offset_ns"].get<int64_t>();
      trace.has_clock = true;
    }
    return;
  }
  if (is_merge_metadata(event, "process_name") && event.contains("args") &&
      event["args"].is_object() && event["args"].value("name", "") != "") {
    trace.label = event["args"]["name"].get<std::string>();
  }
  trace.events.push_back(std::move(event));
}

}  // namespace

ProcessTrace parse_process_trace(const std::string& text, const std::string& source) {
  ProcessTrace trace;
  trace.source = source;
  if (is_process_file(text)) {  // a gradwire process file (timeline_record.h)
    DecodedFile decoded = decode_process_file(text);
    trace.closed = decoded.closed;
    trace.dropped_lines = decoded.dropped;
    for (nlohmann::json& event : decoded.events) take_merge_event(trace, std::move(event));
    if (trace.label.empty()) trace.label = std::filesystem::path(source).stem().string();
    return trace;
  }
  // A whole trace (a closed file, or any Chrome trace: an array or {"traceEvents": [...]}).
  nlohmann::json whole = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (whole.is_object() && whole.contains("traceEvents")) whole = whole["traceEvents"];
  if (whole.is_array()) {
    trace.closed = true;
    for (nlohmann::json& event : whole) take_merge_event(trace, std::move(event));
    if (trace.label.empty()) trace.label = std::filesystem::path(source).stem().string();
    return trace;
  }
  // Line by line: the file of a process that did not stop its timeline.
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::string_view body(line);
    while (!body.empty() && (body.back() == '\r' || body.back() == ' ')) body.remove_suffix(1);
    if (body == "]") {
      trace.closed = true;
      continue;
    }
    if (!body.empty() && (body.front() == '[' || body.front() == ',')) body.remove_prefix(1);
    if (body.empty()) continue;
    take_merge_event(trace, nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false));
  }
  if (trace.label.empty()) trace.label = std::filesystem::path(source).stem().string();
  return trace;
}

ProcessTrace read_process_trace(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("gradwire: cannot read the timeline file " + path);
  std::ostringstream text;
  text << file.rdbuf();
  return parse_process_trace(text.str(), path);
}

bool is_trace_file_name(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension().string();
  return extension == kProcessFileExtension || extension == ".json";
}

std::vector<std::string> list_trace_files(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    if (!std::filesystem::is_directory(path)) {
      files.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      if (entry.is_regular_file() && is_trace_file_name(entry.path().string())) {
        found.push_back(entry.path().string());
      }
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

bool ProcessOrder::operator<(const ProcessOrder& other) const {
  if (group != other.group) return group < other.group;
  if (index != other.index) return index < other.index;
  return label < other.label;
}

ProcessOrder process_order(const std::string& label) {
  ProcessOrder order;
  order.label = label;
  const auto numbered = [&](const std::string& prefix, int group) {
    if (label.rfind(prefix, 0) != 0 || label.size() == prefix.size()) return false;
    const std::string rest = label.substr(prefix.size());
    char* end = nullptr;
    const long long index = std::strtoll(rest.c_str(), &end, 10);
    if (end == rest.c_str()) return false;
    order.group = group;
    order.index = index;
    return true;
  };
  // "ps servers 4-7": one process hosting several servers, placed by its first.
  if (!numbered("rank ", 0) && !numbered("ps server ", 1) && !numbered("ps servers ", 1)) {
    order.group = 2;
  }
  return order;
}

nlohmann::json merge_traces(std::vector<ProcessTrace> processes, MergeSummary* summary) {
  std::stable_sort(processes.begin(), processes.end(),
                   [](const ProcessTrace& a, const ProcessTrace& b) {
                     return process_order(a.label) < process_order(b.label);
                   });
  // The job clock's earliest time over all timed events, in nanoseconds: the trace's zero.
  int64_t zero_ns = std::numeric_limits<int64_t>::max();
  for (const ProcessTrace& process : processes) {
    for (const nlohmann::json& event : process.events) {
      if (!event.contains("ts") || !event["ts"].is_number()) continue;
      const int64_t ts_ns = static_cast<int64_t>(event["ts"].get<double>() * 1000.0);
      zero_ns = std::min(zero_ns, ts_ns + process.offset_ns);
    }
  }
  if (zero_ns == std::numeric_limits<int64_t>::max()) zero_ns = 0;

  MergeSummary counts;
  nlohmann::json events = nlohmann::json::array();
  int64_t pid = 0;
  for (ProcessTrace& process : processes) {
    ++pid;
    counts.processes++;
    counts.unclosed += process.closed ? 0 : 1;
    counts.dropped_lines += process.dropped_lines;
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"name", process.label}}}});
    events.push_back({{"ph", "M"},
                      {"name", "process_sort_index"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"sort_index", pid}}}});
    // Shift in whole nanoseconds first, so that microsecond timestamps keep their precision.
    const double shift_us = static_cast<double>(process.offset_ns - zero_ns) / 1000.0;
    for (nlohmann::json& event : process.events) {
      if (is_merge_metadata(event, "process_name") ||
          is_merge_metadata(event, "process_sort_index"))
        continue;
      event["pid"] = pid;
      if (event.contains("ts") && event["ts"].is_number()) {
        event["ts"] = event["ts"].get<double>() + shift_us;
      }
      if (event.contains("id") && event["id"].is_number_unsigned()) {
        event["id"] = static_cast<uint64_t>(pid) * kMergeIdsPerProcess +
                      event["id"].get<uint64_t>() % kMergeIdsPerProcess;
      }
      counts.events++;
      events.push_back(std::move(event));
    }
  }
  if (summary != nullptr) *summary = counts;
  return {
      {"traceEvents", std::move(events)},
      {"displayTimeUnit", "ns"},
      {"otherData", {{"producer", "gradwire timeline merge"}, {"processes", counts.processes}}}};
}

std::string describe(const IncompleteFile& file) {
  std::string text = file.file + " (" + file.label + ")";
  if (!file.closed) text += " was not closed (the process was killed?)";
  if (file.dropped_lines > 0) {
    text += std::string(file.closed ? "" : ",") + " a cut line dropped";
  }
  return text;
}

MergeReport merge_files(const std::vector<std::string>& files, const std::string& out) {
  MergeReport report;
  std::vector<ProcessTrace> processes;
  for (const std::string& file : files) {
    processes.push_back(read_process_trace(file));
    const ProcessTrace& process = processes.back();
    if (!process.closed || process.dropped_lines > 0) {
      report.incomplete.push_back({file, process.label, process.closed, process.dropped_lines});
    }
  }
  const nlohmann::json trace = merge_traces(std::move(processes), &report.summary);
  prepare_output_file(out, "trace");
  write_file_atomically(out, trace.dump() + "\n", "trace");
  return report;
}

}  // namespace gradwire::timeline
