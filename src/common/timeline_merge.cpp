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

constexpr int64_t kNoTime = std::numeric_limits<int64_t>::max();

std::string read_whole_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("gradwire: cannot read the timeline file " + path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// The earliest time of a parsed trace's timed events on the job's clock, kNoTime without one.
int64_t earliest_ns(const ProcessTrace& process) {
  int64_t earliest = kNoTime;
  for (const nlohmann::json& event : process.events) {
    if (!event.contains("ts") || !event["ts"].is_number()) continue;
    const int64_t ts_ns = static_cast<int64_t>(event["ts"].get<double>() * 1000.0);
    earliest = std::min(earliest, ts_ns + process.offset_ns);
  }
  return earliest;
}

// Puts a parsed event of process `pid` into the merged trace: its pid, its ts moved by `shift_ns`,
// its async id renumbered for the process. False for the process metadata merge writes itself.
bool place_json_event(nlohmann::json& event, int64_t pid, int64_t shift_ns) {
  if (is_merge_metadata(event, "process_name") || is_merge_metadata(event, "process_sort_index")) {
    return false;
  }
  event["pid"] = pid;
  if (event.contains("ts") && event["ts"].is_number()) {
    // Shifted in whole nanoseconds first, so that microsecond timestamps keep their precision.
    event["ts"] = event["ts"].get<double>() + static_cast<double>(shift_ns) / 1000.0;
  }
  if (event.contains("id") && event["id"].is_number_unsigned()) {
    event["id"] = static_cast<uint64_t>(pid) * kMergeIdsPerProcess +
                  event["id"].get<uint64_t>() % kMergeIdsPerProcess;
  }
  return true;
}

// The metadata merge writes for process `pid`: its name and its place.
std::vector<nlohmann::json> process_metadata(int64_t pid, const std::string& label) {
  return {{{"ph", "M"},
           {"name", "process_name"},
           {"pid", pid},
           {"tid", 0},
           {"args", {{"name", label}}}},
          {{"ph", "M"},
           {"name", "process_sort_index"},
           {"pid", pid},
           {"tid", 0},
           {"args", {{"sort_index", pid}}}}};
}

nlohmann::json other_data(size_t processes) {
  return {{"producer", "gradwire timeline merge"}, {"processes", processes}};
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
  return parse_process_trace(read_whole_file(path), path);
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
  int64_t zero_ns = kNoTime;
  for (const ProcessTrace& process : processes) zero_ns = std::min(zero_ns, earliest_ns(process));
  if (zero_ns == kNoTime) zero_ns = 0;

  MergeSummary counts;
  nlohmann::json events = nlohmann::json::array();
  int64_t pid = 0;
  for (ProcessTrace& process : processes) {
    ++pid;
    counts.processes++;
    counts.unclosed += process.closed ? 0 : 1;
    counts.dropped_lines += process.dropped_lines;
    for (nlohmann::json& event : process_metadata(pid, process.label)) {
      events.push_back(std::move(event));
    }
    for (nlohmann::json& event : process.events) {
      if (!place_json_event(event, pid, process.offset_ns - zero_ns)) continue;
      counts.events++;
      events.push_back(std::move(event));
    }
  }
  if (summary != nullptr) *summary = counts;
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ns"},
          {"otherData", other_data(counts.processes)}};
}

std::string describe(const IncompleteFile& file) {
  std::string text = file.file + " (" + file.label + ")";
  if (!file.closed) text += " was not closed (the process was killed?)";
  if (file.dropped_lines > 0) {
    text += std::string(file.closed ? "" : ",") + " a cut line dropped";
  }
  return text;
}

namespace {

// What the streaming merge keeps of one input (Note [streaming merge]).
struct MergeInput {
  std::string file;
  bool binary = false;
  ProcessTrace trace;  // a binary file's without its events; a JSON file's whole
  int64_t earliest_ns = kNoTime;
};

// Whether merge writes a binary file's metadata event itself (the process's name and place) or
// drops it (its clock, applied to its timestamps).
bool replaced_by_merge(const Event& event) {
  if (event.phase != 'M') return false;
  const std::string_view name = event.name();
  return name == "process_name" || name == "process_sort_index" || name == kMergeClockEvent;
}

// A binary file's first pass: its label, last clock offset, earliest time and how it ended.
MergeInput scan_binary(const std::string& file, std::string_view bytes) {
  MergeInput input;
  input.file = file;
  input.binary = true;
  ProcessTrace& trace = input.trace;
  trace.source = file;
  int64_t earliest = kNoTime;
  const DecodeEnd end = for_each_event(bytes, [&](const Event& event) {
    if (event.phase != 'M') {
      earliest = std::min(earliest, event.ts_ns);
    } else if (event.name() == kMergeClockEvent) {
      for (uint8_t i = 0; i < event.arg_count; ++i) {
        const ArgSlot& slot = event.args[i];
        if (slot.key != nullptr && std::string_view(slot.key) == "offset_ns" &&
            slot.kind == Arg::Kind::kInt) {
          trace.offset_ns = slot.int_value;
          trace.has_clock = true;
        }
      }
    } else if (event.name() == "process_name" && !text_arg(event, "name").empty()) {
      trace.label = std::string(text_arg(event, "name"));
    }
  });
  trace.closed = end.closed;
  trace.dropped_lines = end.dropped;
  if (trace.label.empty()) trace.label = std::filesystem::path(file).stem().string();
  if (earliest != kNoTime) input.earliest_ns = earliest + trace.offset_ns;
  return input;
}

// Writes the merged trace in pieces of about a mebibyte: `head`, the events apart by commas, then
// the tail.
class TraceWriter {
 public:
  TraceWriter(const std::string& out, std::string head)
      : file_(out, "trace"), buffer_(std::move(head)) {}
  // Where the next event's JSON goes (after a comma when one came before).
  std::string& next_event() {
    if (events_++ > 0) buffer_ += ",\n";
    return buffer_;
  }
  // After each event.
  void event_done() {
    if (buffer_.size() >= (size_t{1} << 20)) flush();
  }
  void finish(std::string_view tail) {
    buffer_ += tail;
    flush();
    file_.commit();
  }

 private:
  void flush() {
    file_.write(buffer_);
    buffer_.clear();
  }
  AtomicFileWriter file_;
  std::string buffer_;
  size_t events_ = 0;
};

}  // namespace

// Note [streaming merge]: merge_files never holds the job's events. A binary process file is read
// twice: a first pass finds its label, clock and earliest time (the trace's zero is the earliest
// over all files), the second writes each event's JSON straight to the output, its timestamps
// moved in whole nanoseconds. Only one file's bytes are in memory at a time, and the output is
// written a mebibyte at a time. (Holding the events as JSON objects took about 1.8 KB an event:
// 0.74 GB for the 406,000 events of a 6-second hybrid job.) JSON inputs, gradwire's process files
// before 2026-11-29, are parsed whole as before.
MergeReport merge_files(const std::vector<std::string>& files, const std::string& out) {
  MergeReport report;
  std::vector<MergeInput> inputs;
  for (const std::string& file : files) {
    std::string text = read_whole_file(file);
    if (is_process_file(text)) {
      inputs.push_back(scan_binary(file, text));
    } else {
      MergeInput input;
      input.file = file;
      input.trace = parse_process_trace(text, file);
      input.earliest_ns = earliest_ns(input.trace);
      inputs.push_back(std::move(input));
    }
    const ProcessTrace& process = inputs.back().trace;
    if (!process.closed || process.dropped_lines > 0) {
      report.incomplete.push_back({file, process.label, process.closed, process.dropped_lines});
    }
  }
  std::stable_sort(inputs.begin(), inputs.end(), [](const MergeInput& a, const MergeInput& b) {
    return process_order(a.trace.label) < process_order(b.trace.label);
  });
  int64_t zero_ns = kNoTime;
  for (const MergeInput& input : inputs) zero_ns = std::min(zero_ns, input.earliest_ns);
  if (zero_ns == kNoTime) zero_ns = 0;

  prepare_output_file(out, "trace");
  TraceWriter writer(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":" +
                              other_data(inputs.size()).dump() + ",\"traceEvents\":[\n");
  MergeSummary& counts = report.summary;
  int64_t pid = 0;
  for (MergeInput& input : inputs) {
    ++pid;
    ProcessTrace& process = input.trace;
    counts.processes++;
    counts.unclosed += process.closed ? 0 : 1;
    counts.dropped_lines += process.dropped_lines;
    for (const nlohmann::json& event : process_metadata(pid, process.label)) {
      writer.next_event() += event.dump();
      writer.event_done();
    }
    const int64_t shift_ns = process.offset_ns - zero_ns;
    if (!input.binary) {
      for (nlohmann::json& event : process.events) {
        if (!place_json_event(event, pid, shift_ns)) continue;
        counts.events++;
        writer.next_event() += event.dump();
        writer.event_done();
      }
      process.events.clear();
      continue;
    }
    const std::string bytes = read_whole_file(input.file);
    for_each_event(bytes, [&](const Event& decoded) {
      if (replaced_by_merge(decoded)) return;
      Event event = decoded;
      if (event.phase != 'M') event.ts_ns += shift_ns;
      if (event.phase == 'b' || event.phase == 'e' || event.phase == 'A') {
        event.id =
            static_cast<uint64_t>(pid) * kMergeIdsPerProcess + event.id % kMergeIdsPerProcess;
      }
      counts.events += event.phase == 'A' ? 2 : 1;  // an 'A' record is its "b" and its "e"
      append_event_json(writer.next_event(), event, pid);
      writer.event_done();
    });
  }
  writer.finish("\n]}\n");
  return report;
}

}  // namespace gradwire::timeline
