#include "harness/trace_summary.h"

#include <algorithm>
#include <map>
#include <optional>

#include "gradwire/common/error.h"
#include "harness/table.h"

namespace gradwire::bench {

TraceIntervals trace_union(TraceIntervals intervals) {
  intervals.erase(std::remove_if(intervals.begin(), intervals.end(),
                                 [](const TraceInterval& i) { return !(i.end_us > i.begin_us); }),
                  intervals.end());
  std::sort(intervals.begin(), intervals.end(),
            [](const TraceInterval& a, const TraceInterval& b) { return a.begin_us < b.begin_us; });
  TraceIntervals merged;
  for (const auto& interval : intervals) {
    if (!merged.empty() && interval.begin_us <= merged.back().end_us) {
      merged.back().end_us = std::max(merged.back().end_us, interval.end_us);
    } else {
      merged.push_back(interval);
    }
  }
  return merged;
}

TraceIntervals trace_intersect(const TraceIntervals& a, const TraceIntervals& b) {
  TraceIntervals out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double begin = std::max(a[i].begin_us, b[j].begin_us);
    const double end = std::min(a[i].end_us, b[j].end_us);
    if (end > begin) out.push_back({begin, end});
    (a[i].end_us < b[j].end_us) ? ++i : ++j;
  }
  return out;
}

TraceIntervals trace_subtract(const TraceIntervals& a, const TraceIntervals& b) {
  TraceIntervals out;
  std::size_t j = 0;
  for (const auto& interval : a) {
    double begin = interval.begin_us;
    while (j < b.size() && b[j].end_us <= begin) ++j;
    std::size_t k = j;
    while (k < b.size() && b[k].begin_us < interval.end_us) {
      if (b[k].begin_us > begin) out.push_back({begin, b[k].begin_us});
      begin = std::max(begin, b[k].end_us);
      ++k;
    }
    if (interval.end_us > begin) out.push_back({begin, interval.end_us});
  }
  return out;
}

double trace_length_us(const TraceIntervals& intervals) {
  double total = 0;
  for (const auto& interval : intervals) total += interval.end_us - interval.begin_us;
  return total;
}

namespace {

// One span of a process: a complete event, or an async pair joined by its id.
struct TraceSpanRecord {
  std::string name;
  std::string category;
  int64_t tid = 0;      // the thread that recorded it (an async span's beginning)
  int64_t end_tid = 0;  // the thread that ended it (a complete event's own)
  bool async = false;
  TraceInterval interval;
};

struct TraceProcessRecord {
  std::string label;
  std::vector<TraceSpanRecord> spans;
  std::map<std::pair<std::string, std::string>, std::pair<TraceSpanRecord, bool>> open;  // by id
};

std::string text_field(const nlohmann::json& event, const char* key) {
  const auto it = event.find(key);
  return it != event.end() && it->is_string() ? it->get<std::string>() : std::string();
}

double number_field(const nlohmann::json& event, const char* key) {
  const auto it = event.find(key);
  return it != event.end() && it->is_number() ? it->get<double>() : 0.0;
}

int64_t int_field(const nlohmann::json& event, const char* key) {
  const auto it = event.find(key);
  return it != event.end() && it->is_number() ? it->get<int64_t>() : 0;
}

std::optional<int> rank_of_label(const std::string& label) {
  const std::string prefix = "rank ";
  if (label.rfind(prefix, 0) != 0) return std::nullopt;
  try {
    std::size_t used = 0;
    const int rank = std::stoi(label.substr(prefix.size()), &used);
    if (used + prefix.size() != label.size()) return std::nullopt;
    return rank;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool is_server_label(const std::string& label) { return label.rfind("ps server", 0) == 0; }

bool ends_with_wait(const std::string& name) {
  return name.size() >= 4 && name.compare(name.size() - 4, 4, "wait") == 0;
}

TraceIntervals clip(const TraceIntervals& intervals, const TraceInterval& window) {
  return trace_intersect(intervals, {window});
}

double seconds(const TraceIntervals& intervals) { return trace_length_us(intervals) * 1e-6; }

// The thread a rank trains on: the one with the most "forward" spans, else the one whose spans
// of gradwire's categories cover the most time.
int64_t training_thread(const std::vector<TraceSpanRecord>& spans) {
  std::map<int64_t, int> forwards;
  std::map<int64_t, TraceIntervals> busy;
  for (const auto& span : spans) {
    if (span.async) continue;
    if (span.name == "forward") ++forwards[span.tid];
    busy[span.tid].push_back(span.interval);
  }
  if (!forwards.empty()) {
    return std::max_element(forwards.begin(), forwards.end(),
                            [](const auto& a, const auto& b) { return a.second < b.second; })
        ->first;
  }
  int64_t best = 0;
  double best_us = -1;
  for (auto& [tid, intervals] : busy) {
    const double us = trace_length_us(trace_union(intervals));
    if (us > best_us) best = tid, best_us = us;
  }
  return best;
}

RankTimeSummary summarize_rank(const TraceProcessRecord& process, int rank) {
  RankTimeSummary out;
  out.process = process.label;
  out.rank = rank;
  const int64_t thread = training_thread(process.spans);
  // DDP's buckets: the collectives inside them are its asynchronous reductions.
  TraceIntervals buckets;
  for (const auto& span : process.spans) {
    if (span.async && span.category == "ddp") buckets.push_back(span.interval);
  }
  buckets = trace_union(std::move(buckets));
  auto in_bucket = [&buckets](const TraceInterval& interval) {
    return !trace_intersect(buckets, {{interval.begin_us, interval.begin_us + 1e-3}}).empty();
  };
  TraceIntervals own, model, exposed, waits, async_comm, sync_comm;
  for (const auto& span : process.spans) {
    const bool on_thread = span.tid == thread && (!span.async || span.end_tid == thread);
    const bool comm = span.category == "comm" || (span.category == "ddp" && span.async);
    if (span.async) {
      if (comm) async_comm.push_back(span.interval);
      // A collective issued and waited for by the training thread itself, outside DDP's
      // buckets (DDP's broadcast of buffers in forward, a barrier): synchronous, exposed.
      if (on_thread && span.category == "comm" && !in_bucket(span.interval)) {
        sync_comm.push_back(span.interval);
      }
      continue;
    }
    if (span.tid != thread) {
      if (span.category == "comm") async_comm.push_back(span.interval);
      continue;
    }
    own.push_back(span.interval);
    if (span.category == "ddp" && (span.name == "forward" || span.name == "backward")) {
      model.push_back(span.interval);
      if (span.name == "forward") ++out.steps;
    } else if ((span.category == "ddp" && (span.name == "ddp wait" || span.name == "comm hook")) ||
               span.category == "comm" || (span.category == "ps" && !ends_with_wait(span.name))) {
      exposed.push_back(span.interval);
    } else if (span.category == "data" || ends_with_wait(span.name)) {
      waits.push_back(span.interval);
    }
  }
  own = trace_union(std::move(own));
  if (own.empty()) return out;
  const TraceInterval window{own.front().begin_us, own.back().end_us};
  model = clip(trace_union(std::move(model)), window);
  exposed.insert(exposed.end(), sync_comm.begin(), sync_comm.end());
  const TraceIntervals exposed_set = clip(trace_union(std::move(exposed)), window);
  const TraceIntervals waits_set =
      trace_subtract(clip(trace_union(std::move(waits)), window), exposed_set);
  const TraceIntervals not_compute = trace_union([&] {
    TraceIntervals both = exposed_set;
    both.insert(both.end(), waits_set.begin(), waits_set.end());
    return both;
  }());
  out.compute_from = model.empty() ? "window" : "forward/backward";
  const TraceIntervals compute =
      trace_subtract(model.empty() ? TraceIntervals{window} : model, not_compute);
  out.window_s = (window.end_us - window.begin_us) * 1e-6;
  out.compute_s = seconds(compute);
  out.exposed_s = seconds(exposed_set);
  out.waits_s = seconds(waits_set);
  out.hidden_s =
      seconds(trace_intersect(clip(trace_union(std::move(async_comm)), window), compute));
  out.other_s = std::max(0.0, out.window_s - out.compute_s - out.exposed_s - out.waits_s);
  return out;
}

ServerTimeSummary summarize_server(const TraceProcessRecord& process) {
  ServerTimeSummary out;
  out.process = process.label;
  TraceIntervals all, busy;
  for (const auto& span : process.spans) {
    all.push_back(span.interval);
    if (span.async || ends_with_wait(span.name)) continue;
    busy.push_back(span.interval);
    if (span.category == "ps") ++out.calls;
  }
  all = trace_union(std::move(all));
  if (all.empty()) return out;
  out.window_s = (all.back().end_us - all.front().begin_us) * 1e-6;
  out.busy_s = seconds(trace_union(std::move(busy)));
  return out;
}

}  // namespace

TraceSummary summarize_trace(const nlohmann::json& trace, const std::string& source) {
  const auto events = trace.is_object() ? trace.find("traceEvents") : trace.end();
  if (!trace.is_object() || events == trace.end() || !events->is_array()) {
    throw InvalidArgument(source + " is not a merged trace: it has no traceEvents array");
  }
  std::map<int64_t, TraceProcessRecord> processes;
  for (const auto& event : *events) {
    if (!event.is_object()) continue;
    const std::string phase = text_field(event, "ph");
    const int64_t pid = int_field(event, "pid");
    TraceProcessRecord& process = processes[pid];
    if (phase == "M") {
      if (text_field(event, "name") == "process_name" && event.contains("args")) {
        process.label = text_field(event["args"], "name");
      }
      continue;
    }
    TraceSpanRecord span;
    span.name = text_field(event, "name");
    span.category = text_field(event, "cat");
    span.tid = span.end_tid = int_field(event, "tid");
    const double ts = number_field(event, "ts");
    if (phase == "X") {
      span.interval = {ts, ts + number_field(event, "dur")};
      process.spans.push_back(std::move(span));
    } else if (phase == "b" || phase == "e") {
      const auto id = event.find("id");
      const std::string key = id == event.end() ? std::string() : id->dump();
      auto& [open, begun] = process.open[{span.category, key}];
      if (phase == "b") {
        span.async = true;
        span.interval = {ts, ts};
        open = std::move(span);
        begun = true;
      } else if (begun) {
        open.interval.end_us = ts;
        open.end_tid = span.tid;
        process.spans.push_back(open);
        begun = false;
      }
    }
  }
  TraceSummary summary;
  for (const auto& [pid, process] : processes) {
    if (const auto rank = rank_of_label(process.label)) {
      // A rank that recorded no span (a 1-trainer job without communication) has no line.
      RankTimeSummary line = summarize_rank(process, *rank);
      if (line.window_s > 0) summary.ranks.push_back(std::move(line));
    } else if (is_server_label(process.label)) {
      summary.servers.push_back(summarize_server(process));
    }
  }
  std::stable_sort(summary.ranks.begin(), summary.ranks.end(),
                   [](const auto& a, const auto& b) { return a.rank < b.rank; });
  return summary;
}

nlohmann::json to_json(const TraceSummary& summary) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : summary.ranks) {
    ranks.push_back({{"process", r.process},
                     {"rank", r.rank},
                     {"steps", r.steps},
                     {"compute_from", r.compute_from},
                     {"window_s", r.window_s},
                     {"compute_s", r.compute_s},
                     {"exposed_s", r.exposed_s},
                     {"hidden_s", r.hidden_s},
                     {"waits_s", r.waits_s},
                     {"other_s", r.other_s}});
  }
  nlohmann::json servers = nlohmann::json::array();
  for (const auto& s : summary.servers) {
    servers.push_back({{"process", s.process},
                       {"window_s", s.window_s},
                       {"busy_s", s.busy_s},
                       {"calls", s.calls}});
  }
  return {{"ranks", std::move(ranks)}, {"servers", std::move(servers)}};
}

TraceSummary trace_summary_from_json(const nlohmann::json& json, const std::string& source) {
  try {
    TraceSummary summary;
    for (const auto& r : json.at("ranks")) {
      summary.ranks.push_back({r.at("process").get<std::string>(), r.at("rank").get<int>(),
                               r.at("steps").get<int>(), r.value("compute_from", std::string()),
                               r.at("window_s").get<double>(), r.at("compute_s").get<double>(),
                               r.at("exposed_s").get<double>(), r.at("hidden_s").get<double>(),
                               r.at("waits_s").get<double>(), r.at("other_s").get<double>()});
    }
    for (const auto& s : json.value("servers", nlohmann::json::array())) {
      summary.servers.push_back({s.at("process").get<std::string>(), s.at("window_s").get<double>(),
                                 s.at("busy_s").get<double>(), s.value("calls", 0)});
    }
    return summary;
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument(source + " has a trace summary that cannot be read (" + e.what() + ")");
  }
}

void print_trace_summary(std::ostream& out, const TraceSummary& summary, const std::string& title) {
  out << "\n" << title << "\n\n";
  if (summary.ranks.empty() && summary.servers.empty()) {
    out << "(no rank or server recorded a span)\n" << std::flush;
    return;
  }
  const bool per_step = std::all_of(summary.ranks.begin(), summary.ranks.end(),
                                    [](const RankTimeSummary& r) { return r.steps > 0; });
  const Table table({{"process", 10, Align::kLeft},
                     {"steps", 6},
                     {per_step ? "ms/step" : "window ms", 10},
                     {"compute", 9},
                     {"exposed", 9},
                     {"hidden", 9},
                     {"waits", 9},
                     {"other", 9}});
  out << table.header() << "\n";
  for (const auto& r : summary.ranks) {
    const double scale = 1e3 / (per_step ? r.steps : 1);
    auto ms = [&](double s) { return format_fixed(s * scale, 2); };
    out << table.row({r.process, std::to_string(r.steps), ms(r.window_s), ms(r.compute_s),
                      ms(r.exposed_s), ms(r.hidden_s), ms(r.waits_s), ms(r.other_s)})
        << "\n";
  }
  if (!summary.servers.empty()) {
    const Table servers({{"server", 16, Align::kLeft},
                         {"calls", 8},
                         {"window ms", 10},
                         {"busy ms", 10},
                         {"busy", 6}});
    out << "\n" << servers.header() << "\n";
    for (const auto& s : summary.servers) {
      out << servers.row(
                 {s.process, std::to_string(s.calls), format_fixed(s.window_s * 1e3, 1),
                  format_fixed(s.busy_s * 1e3, 1),
                  s.window_s > 0 ? format_fixed(100 * s.busy_s / s.window_s, 0) + "%" : "-"})
          << "\n";
    }
  }
  out << std::flush;
}

}  // namespace gradwire::bench
