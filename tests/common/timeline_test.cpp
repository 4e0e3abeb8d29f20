// The timeline recorder (gradwire/common/timeline.h): its process files decode to Chrome trace
// events, one track per thread, spans across threads, nothing when off, clock offsets; and the
// records themselves (timeline_record.h): decoded as built, cut files, malformed records.
#include "gradwire/common/timeline.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/timeline_event.h"
#include "common/timeline_record.h"
#include "gradwire/common/env.h"
#include "gradwire/common/error.h"
#include "gradwire/common/settings.h"

namespace gradwire::timeline {
namespace timeline_test {

namespace fs = std::filesystem;
using nlohmann::json;

struct TempDir {
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "gradwire-timeline-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    stop();
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string path;
};

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// The events of a process file (metadata included), decoded as merge does; `closed` says whether
// it ended whole. Fails the test when a record does not decode.
json read_trace(const std::string& path, bool* closed = nullptr) {
  const std::string bytes = read_text(path);
  EXPECT_TRUE(is_process_file(bytes)) << path;
  DecodedFile decoded = decode_process_file(bytes, 7);
  EXPECT_EQ(decoded.dropped, 0u) << path;
  if (closed != nullptr) *closed = decoded.closed;
  return json(decoded.events);
}

std::vector<json> with_phase(const json& events, const std::string& phase) {
  std::vector<json> found;
  for (const json& event : events) {
    if (event["ph"] == phase) found.push_back(event);
  }
  return found;
}

// Checks that `trace` holds two async spans, each a "b" and an "e" of one id (ids apart), of one
// name, in order, and returns their begins and ends.
void expect_two_async_pairs(const json& trace, std::vector<json>* begins, std::vector<json>* ends) {
  *begins = with_phase(trace, "b");
  *ends = with_phase(trace, "e");
  ASSERT_EQ(begins->size(), 2u);
  ASSERT_EQ(ends->size(), 2u);
  EXPECT_NE((*begins)[0]["id"], (*begins)[1]["id"]);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*begins)[i]["id"], (*ends)[i]["id"]);
    EXPECT_EQ((*begins)[i]["name"], (*ends)[i]["name"]);
    EXPECT_LE((*begins)[i]["ts"].get<double>(), (*ends)[i]["ts"].get<double>());
  }
}

TEST(Timeline, WritesAFileThatDecodesToChromeTraceEvents) {
  TempDir dir;
  const std::string path = dir.path + "/sub/rank-0.gwtl";
  start(path, "rank 0");
  ASSERT_TRUE(enabled());
  EXPECT_EQ(current_path(), path);
  name_thread("trainer");
  {
    Span span("allreduce", "comm", {{"bytes", 4096}, {"algorithm", "ring"}});
    span.arg({"ok", true});
  }
  const int64_t begin = now_ns();
  complete("forward \"quoted\"\n", "ddp", begin, begin + 2500, {{"ratio", 0.5}, {"n", 3u}});
  instant("restart", "launch", {{"incarnation", 2}});
  counter("pending bytes", {{"bytes", 100}});
  stop();
  EXPECT_FALSE(enabled());
  EXPECT_EQ(current_path(), "");

  bool closed = false;
  const json trace = read_trace(path, &closed);
  EXPECT_TRUE(closed);
  const auto metadata = with_phase(trace, "M");
  std::map<std::string, std::string> names;
  for (const json& event : metadata) {
    if (event["args"].contains("name")) names[event["name"]] = event["args"]["name"];
  }
  EXPECT_EQ(names["process_name"], "rank 0");
  EXPECT_EQ(names["thread_name"], "trainer");

  const auto spans = with_phase(trace, "X");
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0]["name"], "allreduce");
  EXPECT_EQ(spans[0]["cat"], "comm");
  EXPECT_EQ(spans[0]["args"]["bytes"], 4096);
  EXPECT_EQ(spans[0]["args"]["algorithm"], "ring");
  EXPECT_EQ(spans[0]["args"]["ok"], true);
  EXPECT_GE(spans[0]["dur"].get<double>(), 0.0);
  EXPECT_EQ(spans[1]["name"], "forward \"quoted\"\n");
  EXPECT_DOUBLE_EQ(spans[1]["dur"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(spans[1]["ts"].get<double>(),
                   static_cast<double>(begin / 1000) + static_cast<double>(begin % 1000) / 1000);
  EXPECT_EQ(spans[1]["args"]["ratio"], 0.5);
  EXPECT_EQ(spans[1]["args"]["n"], 3);
  EXPECT_EQ(spans[0]["pid"], spans[1]["pid"]);
  EXPECT_EQ(spans[0]["tid"], spans[1]["tid"]);

  const auto instants = with_phase(trace, "i");
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0]["s"], "p");
  EXPECT_EQ(instants[0]["args"]["incarnation"], 2);
  const auto counters = with_phase(trace, "C");
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0]["args"]["bytes"], 100);
}

TEST(Timeline, AThreadKeepsItsNameInTimelinesStartedLater) {
  TempDir dir;
  const std::string first = dir.path + "/first.gwtl";
  const std::string second = dir.path + "/second.gwtl";
  std::thread([&] {
    name_thread("named before any timeline");
    start(first, "rank 0");
    instant("one", "test");
    stop();
    start(second, "rank 0");
    instant("two", "test");
    stop();
  }).join();
  for (const std::string& path : {first, second}) {
    const json trace = read_trace(path);
    const auto instants = with_phase(trace, "i");
    ASSERT_EQ(instants.size(), 1u) << path;
    std::vector<std::string> names;
    for (const json& event : with_phase(trace, "M")) {
      if (event["name"] == "thread_name" && event["tid"] == instants[0]["tid"]) {
        names.push_back(event["args"]["name"]);
      }
    }
    EXPECT_EQ(names, std::vector<std::string>{"named before any timeline"}) << path;
  }
}

TEST(Timeline, EachThreadHasItsTrackAndNoEventIsLost) {
  TempDir dir;
  const std::string path = dir.path + "/threads.gwtl";
  StartOptions options;
  options.chunk_bytes = 4096;  // many chunks per thread
  start(path, "rank 1", options);
  constexpr int kThreads = 4;
  constexpr int kEvents = 1000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      name_thread("worker " + std::to_string(t));
      for (int i = 0; i < kEvents; ++i) {
        Span span("step", "test", {{"thread", t}, {"i", i}});
      }
    });
  }
  for (std::thread& thread : threads) thread.join();  // they exit before the process
  stop();

  const json trace = read_trace(path);
  std::map<int, std::set<int>> steps_by_tid;  // tid -> the i of its spans
  std::map<int, int> thread_of_tid;
  for (const json& event : with_phase(trace, "X")) {
    const int tid = event["tid"];
    steps_by_tid[tid].insert(event["args"]["i"].get<int>());
    const int thread = event["args"]["thread"];
    EXPECT_EQ(thread_of_tid.emplace(tid, thread).first->second, thread) << "one track per thread";
  }
  ASSERT_EQ(steps_by_tid.size(), static_cast<size_t>(kThreads));
  for (const auto& [tid, steps] : steps_by_tid) EXPECT_EQ(steps.size(), size_t{kEvents}) << tid;
  std::set<std::string> thread_names;
  std::map<int, int> names_of_tid;
  for (const json& event : with_phase(trace, "M")) {
    if (event["name"] == "thread_name" && thread_of_tid.count(event["tid"].get<int>()) != 0) {
      thread_names.insert(event["args"]["name"].get<std::string>());
      ++names_of_tid[event["tid"].get<int>()];
    }
  }
  EXPECT_TRUE(thread_names.count("worker 0") && thread_names.count("worker 3"));
  // A thread that names itself before recording is named once, not by its system name first.
  for (const auto& [tid, names] : names_of_tid) EXPECT_EQ(names, 1) << tid;
}

TEST(Timeline, FlushesWhileThreadsRecordWriteEachEventOnce) {
  TempDir dir;
  const std::string path = dir.path + "/racing.gwtl";
  StartOptions options;
  options.chunk_bytes = 4096;
  options.flush_interval_ns = 100'000;  // chunks by time as well as by size
  start(path, "rank 0", options);
  constexpr int kThreads = 3;
  constexpr int kEvents = 4000;
  std::atomic<int> running{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&running] {
      for (int i = 0; i < kEvents; ++i) complete("step", "test", now_ns(), now_ns(), {{"i", i}});
      running--;
    });
  }
  while (running > 0) flush();  // Note [timeline buffers]: flush() beside the owners' chunks
  for (std::thread& thread : threads) thread.join();
  stop();
  std::map<int, std::multiset<int>> steps_by_tid;
  for (const json& event : with_phase(read_trace(path), "X")) {
    steps_by_tid[event["tid"].get<int>()].insert(event["args"]["i"].get<int>());
  }
  ASSERT_EQ(steps_by_tid.size(), size_t{kThreads});
  for (const auto& [tid, steps] : steps_by_tid) {
    ASSERT_EQ(steps.size(), size_t{kEvents}) << tid;
    for (int i = 0; i < kEvents; ++i) ASSERT_EQ(steps.count(i), 1u) << tid << " " << i;
  }
}

TEST(Timeline, AThreadWritesItsChunkItselfWhenTheWriterIsBehind) {
  TempDir dir;
  const std::string path = dir.path + "/behind.gwtl";
  StartOptions options;
  options.chunk_bytes = 1024;
  options.max_pending_chunks = 0;  // the writer is always "behind": every chunk written in place
  start(path, "rank 0", options);
  constexpr int kEvents = 1000;
  for (int i = 0; i < kEvents; ++i) instant("tick", "test", {{"i", i}}, Scope::kThread);
  stop();
  std::set<int> ticks;
  for (const json& event : with_phase(read_trace(path), "i")) {
    ticks.insert(event["args"]["i"].get<int>());
  }
  EXPECT_EQ(ticks.size(), size_t{kEvents});
}

TEST(Timeline, TheWriterWritesBufferedEventsEveryInterval) {
  TempDir dir;
  const std::string path = dir.path + "/interval.gwtl";
  StartOptions options;
  options.flush_interval_ns = 20'000'000;  // 20 ms; the chunk never fills
  start(path, "rank 0", options);
  instant("written without a flush", "test");
  // No flush(), no stop(): the writer thread writes it within an interval (or so, at its low
  // priority on a busy machine).
  bool found = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!found && std::chrono::steady_clock::now() < deadline) {
    found = read_text(path).find("written without a flush") != std::string::npos;
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop();
  EXPECT_TRUE(found);
}

TEST(Timeline, ASpanOutlivingTheTimelineIsDropped) {
  TempDir dir;
  const std::string path = dir.path + "/late.gwtl";
  start(path, "rank 0");
  auto span = std::make_unique<Span>("late", "test");
  AsyncSpan async("late async", "test");
  EXPECT_TRUE(span->active());
  stop();
  span.reset();
  async.end();
  complete("after", "test", 0, 1);
  const json trace = read_trace(path);
  EXPECT_TRUE(with_phase(trace, "X").empty());
  EXPECT_EQ(with_phase(trace, "b").size(), 1u);
  EXPECT_TRUE(with_phase(trace, "e").empty());
}

TEST(Timeline, AnAsyncSpanEndsOnAnotherThread) {
  TempDir dir;
  const std::string path = dir.path + "/async.gwtl";
  start(path, "rank 0");
  AsyncSpan first("bucket 0 allreduce", "ddp", {{"bytes", 1 << 20}});
  AsyncSpan second("bucket 1 allreduce", "ddp");
  AsyncSpan moved = std::move(second);
  EXPECT_FALSE(second.active());
  std::thread finisher([&] {
    first.end({{"waited", true}});
    moved.end();
  });
  finisher.join();
  stop();

  std::vector<json> begins, ends;
  expect_two_async_pairs(read_trace(path), &begins, &ends);
  if (HasFatalFailure()) return;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(ends[i]["cat"], "ddp");
    EXPECT_NE(begins[i]["tid"], ends[i]["tid"]) << "ended on the finisher's thread";
  }
  EXPECT_EQ(begins[0]["args"]["bytes"], 1 << 20);
  EXPECT_EQ(ends[0]["args"]["waited"], true);
}

TEST(Timeline, AnAsyncSpanRecordedWholeAtItsEnd) {
  TempDir dir;
  const std::string path = dir.path + "/async_whole.gwtl";
  start(path, "rank 0");
  const int64_t started = now_ns();
  // Six args on the "b", one on the "e", as a parameter-server call's span has (kMaxArgs).
  async_span("lookup server 3", "ps", started, started + 2'500'000,
             {{"server", 3},
              {"table", "emb"},
              {"bytes_sent", 100},
              {"ids", 7},
              {"parts", 1},
              {"transport", "grpc"}},
             {{"bytes_received", 640}});
  async_span("push server 3", "ps", started + 10, started, {});  // an end before its start: clamped
  stop();

  std::vector<json> begins, ends;
  expect_two_async_pairs(read_trace(path), &begins, &ends);
  if (HasFatalFailure()) return;
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(begins[i]["cat"], "ps");
  EXPECT_NEAR(ends[0]["ts"].get<double>() - begins[0]["ts"].get<double>(), 2500.0, 0.01);
  EXPECT_EQ(begins[0]["args"]["server"], 3);
  EXPECT_EQ(begins[0]["args"].size(), 6u);
  EXPECT_EQ(begins[0]["args"]["transport"], "grpc");
  EXPECT_EQ(ends[0]["args"], json({{"bytes_received", 640}}));
  EXPECT_FALSE(begins[1].contains("args"));
  EXPECT_FALSE(ends[1].contains("args"));
}

TEST(Timeline, OffRecordsNothingAndWritesNoFile) {
  TempDir dir;
  stop();
  EXPECT_FALSE(enabled());
  EXPECT_EQ(start_from_env(EnvMap{}, "rank 0"), std::nullopt);
  EXPECT_EQ(start_from_env(EnvMap({{settings::kTimeline.name, ""}}), "rank 0"), std::nullopt);
  EXPECT_FALSE(enabled());
  {
    Span span("nothing", "test");
    EXPECT_FALSE(span.active());
    AsyncSpan async("nothing", "test");
    EXPECT_FALSE(async.active());
  }
  complete("nothing", "test", 0, 1);
  instant("nothing", "test");
  flush();
  EXPECT_EQ(current_path(), "");
  EXPECT_TRUE(fs::is_empty(dir.path));
}

TEST(Timeline, FlushWritesWhatABufferHolds) {
  TempDir dir;
  const std::string path = dir.path + "/flush.gwtl";
  start(path, "ps server 1");
  instant("checkpoint", "ps", {{"table", "embeddings"}});
  bool closed = true;
  json events = read_trace(path, &closed);
  EXPECT_TRUE(with_phase(events, "i").empty()) << "still in the thread's buffer";
  flush();
  events = read_trace(path, &closed);
  ASSERT_EQ(with_phase(events, "i").size(), 1u);
  EXPECT_EQ(with_phase(events, "i")[0]["args"]["table"], "embeddings");
  EXPECT_FALSE(closed) << "not closed before stop()";
  stop();
  read_trace(path, &closed);
  EXPECT_TRUE(closed);
}

TEST(Timeline, StartFromEnvWritesTheProcessFileAndARestartStartsAnother) {
  TempDir dir;
  const std::string trace = dir.path + "/trace.json";
  const auto first = start_from_env(EnvMap({{settings::kTimeline.name, trace}}), "rank 3");
  ASSERT_EQ(first, trace + ".d/rank-3.gwtl");
  instant("started", "test");
  const auto second = start_from_env(
      EnvMap({{settings::kTimeline.name, trace}, {"TORCHELASTIC_RESTART_COUNT", "2"}}), "rank 3");
  ASSERT_EQ(second, trace + ".d/rank-3.restart-2.gwtl");
  instant("restarted", "test");
  stop();
  const json before = read_trace(*first);  // closed by the second start
  const json after = read_trace(*second);
  ASSERT_EQ(with_phase(before, "i").size(), 1u);
  ASSERT_EQ(with_phase(after, "i").size(), 1u);
  EXPECT_EQ(with_phase(after, "i")[0]["name"], "restarted");
}

TEST(Timeline, AnAlternatingTimelineRecordsInItsRecordingWindowsOnly) {
  TempDir dir;
  const std::string path = dir.path + "/alternating.gwtl";
  StartOptions options;
  options.alternate_ns = 20'000'000;  // 20 ms
  start(path, "rank 0", options);
  EXPECT_EQ(alternate_ns(), options.alternate_ns);
  bool seen_on = false;
  bool seen_off = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (int i = 0; std::chrono::steady_clock::now() < deadline; ++i) {
    (enabled() ? seen_on : seen_off) = true;
    EXPECT_TRUE(running());
    instant("tick", "test", {{"i", i}});
    if (seen_on && seen_off && i > 2000) break;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  const int64_t offset_ns = clock_offset_ns();
  stop();
  EXPECT_TRUE(seen_on);
  EXPECT_TRUE(seen_off);
  EXPECT_EQ(alternate_ns(), 0);
  EXPECT_FALSE(running());
  // Every tick recorded lies in a window of the job clock that records, or just after a boundary
  // into one that does not (the switching thread wakes a little late on a busy machine).
  const json trace = read_trace(path);
  const std::vector<json> ticks = with_phase(trace, "i");
  ASSERT_FALSE(ticks.empty());
  size_t late = 0;
  for (const json& tick : ticks) {
    const auto job_ns = static_cast<int64_t>(tick["ts"].get<double>() * 1000) + offset_ns;
    const int64_t window = job_ns / options.alternate_ns;
    if (!window_records(window)) {
      ++late;
      EXPECT_LT(job_ns - window * options.alternate_ns, 10'000'000) << tick.dump();
    }
  }
  EXPECT_LT(late, ticks.size() / 4);
}

TEST(Timeline, AStepRecordedThroughoutLiesInOneRecordingWindow) {
  constexpr int64_t kWindow = 100;
  int64_t on = 0;
  while (!window_records(on)) ++on;
  int64_t off = 0;
  while (window_records(off)) ++off;
  EXPECT_EQ(recorded_throughout(on * kWindow + 10, on * kWindow + 90, kWindow, 5), 1);
  EXPECT_EQ(recorded_throughout(off * kWindow + 10, off * kWindow + 90, kWindow, 5), 0);
  // Across a boundary, within the margin after one, and not alternating.
  EXPECT_EQ(recorded_throughout(on * kWindow + 90, on * kWindow + 110, kWindow, 5), -1);
  EXPECT_EQ(recorded_throughout(on * kWindow + 2, on * kWindow + 90, kWindow, 5), -1);
  EXPECT_EQ(recorded_throughout(on * kWindow + 5, on * kWindow + 99, kWindow, 5), 1);
  EXPECT_EQ(recorded_throughout(on * kWindow + 10, on * kWindow + 90, 0, 5), -1);
}

TEST(Timeline, TheRecordingWindowsAreHalfOfThemInNoPeriod) {
  // Periodic work of the machine (timers on the whole second: every 10th window of 100 ms; every
  // other window) must fall on both sides alike, or the within-run comparison is biased.
  for (const int64_t period : {2, 4, 10, 20, 50}) {
    for (int64_t phase = 0; phase < period; ++phase) {
      int recording = 0;
      constexpr int kWindows = 2000;
      for (int64_t k = 0; k < kWindows; ++k) {
        recording += window_records(k * period + phase) ? 1 : 0;
      }
      EXPECT_GT(recording, kWindows * 4 / 10) << "period " << period << " phase " << phase;
      EXPECT_LT(recording, kWindows * 6 / 10) << "period " << period << " phase " << phase;
    }
  }
}

TEST(Timeline, StartFromEnvAlternatesAsTheVariableSays) {
  TempDir dir;
  const std::string trace = dir.path + "/trace.json";
  start_from_env(
      EnvMap({{settings::kTimeline.name, trace}, {settings::kTimelineAlternateMs.name, "50"}}),
      "rank 0");
  EXPECT_EQ(alternate_ns(), 50'000'000);
  stop();
  for (const char* bad : {"0", "-5", "soon"}) {
    EXPECT_THROW(start_from_env(EnvMap({{settings::kTimeline.name, trace},
                                        {settings::kTimelineAlternateMs.name, bad}}),
                                "rank 0"),
                 ConfigError)
        << bad;
    EXPECT_FALSE(running());
  }
}

TEST(Timeline, ProcessFileNames) {
  EXPECT_EQ(process_file("/t/trace.json", "rank 3"), "/t/trace.json.d/rank-3.gwtl");
  EXPECT_EQ(process_file("trace.json", "ps server 1"), "trace.json.d/server-1.gwtl");
  EXPECT_EQ(process_file("trace.json", "ps servers 0-3"), "trace.json.d/servers-0-3.gwtl");
  EXPECT_EQ(process_file("trace.json", "bench/conductor"), "trace.json.d/bench-conductor.gwtl");
  EXPECT_EQ(process_file("trace.json", ""), "trace.json.d/process.gwtl");
  EXPECT_EQ(process_file("trace.json", "rank 0", 1), "trace.json.d/rank-0.restart-1.gwtl");
}

TEST(TimelineEvent, CutAndOddTextStaysValidJson) {
  Event event;
  std::string name = "x";
  for (int i = 0; i < 100; ++i) name += "\xc3\xa9";  // é, cut in the middle by the name's cap
  event.reset('X', name, "cat");
  event.add({"bad", std::string_view("\xff\x01\"x", 4)});
  event.add({"long", std::string(400, 'a')});
  for (int i = 0; i < 10; ++i) event.add({"n", i});
  EXPECT_EQ(event.arg_count, kMaxArgs);
  std::string line;
  append_event_json(line, event, 42);
  const json parsed = json::parse(line);
  EXPECT_EQ(parsed["pid"], 42);
  EXPECT_EQ(parsed["args"]["bad"], "\xef\xbf\xbd\x01\"x");
  EXPECT_LE(parsed["args"]["long"].get<std::string>().size(), kTextBytes);
  const std::string cut = parsed["name"];
  // "x", 39 é and the first byte of the 40th, which becomes U+FFFD (3 bytes).
  EXPECT_EQ(cut.size(), 1 + 78 + 3u);
}

// A process file as the recorder writes one (Note [timeline records]): the magic, each address's
// string record before its first use, the events' records, and the end record when `closed`.
std::string file_of(const std::vector<Event>& events, bool closed) {
  std::vector<unsigned char> bytes(kFileMagic.begin(), kFileMagic.end());
  std::set<uint64_t> defined;
  for (const Event& event : events) {
    std::vector<unsigned char> record(record_size(event));
    encode_record(record.data(), event);
    for_each_address(record.data(), record.data() + record.size(), [&](uint64_t address) {
      if (defined.insert(address).second) {
        append_string_record(bytes, address, reinterpret_cast<const char*>(address));
      }
    });
    bytes.insert(bytes.end(), record.begin(), record.end());
  }
  if (closed) append_end_record(bytes);
  return std::string(bytes.begin(), bytes.end());
}

// The events of every phase, each with each kind of arg.
std::vector<Event> sample_events() {
  std::vector<Event> events(5);
  events[0].reset('X', "allreduce \"q\"\n", "comm");
  events[0].add(
      {{"bytes", int64_t{-4096}}, {"n", 3u}, {"ratio", 0.25}, {"ok", true}, {"algorithm", "ring"}});
  events[0].ts_ns = 1'234'567;
  events[0].dur_ns = 2'500;
  events[0].tid = 11;
  events[1].reset('A', "lookup server 3", "ps");
  events[1].add({{"server", 3}, {"transport", "shm"}});
  events[1].begin_args = events[1].arg_count;
  events[1].add({"bytes_received", 640});
  events[1].ts_ns = 2'000'000;
  events[1].dur_ns = 70'001;
  events[1].id = 9;
  events[2].reset('i', "restart", "launch");
  events[2].scope = 'g';
  events[2].ts_ns = 3'000'000;
  events[3].reset('C', "pending bytes", nullptr);
  events[3].add({"bytes", 100});
  events[3].ts_ns = 4'000'000;
  events[4].reset('M', "thread_name", nullptr);
  events[4].add({"name", "trainer"});
  return events;
}

// The JSON objects an event is written as (an 'A' event: two).
std::vector<json> objects_of(const Event& event, int64_t pid) {
  std::string text;
  append_event_json(text, event, pid);
  std::vector<json> objects;
  const size_t split = text.find("\n,");
  if (split == std::string::npos) return {json::parse(text)};
  return {json::parse(text.substr(0, split)), json::parse(text.substr(split + 2))};
}

TEST(TimelineRecord, AFileDecodesToTheEventsItsRecordsWereBuiltFrom) {
  const std::vector<Event> events = sample_events();
  for (const Event& event : events) {
    EXPECT_EQ(record_size(event) % 8, 0u);
    EXPECT_LE(record_size(event), kMaxRecordBytes);
  }
  EXPECT_LT(record_size(events[0]), kEventBytes / 2) << "a record is compact";
  const DecodedFile decoded = decode_process_file(file_of(events, true), 42);
  EXPECT_TRUE(decoded.closed);
  EXPECT_EQ(decoded.dropped, 0u);
  std::vector<json> expected;
  for (const Event& event : events) {
    for (json& object : objects_of(event, 42)) expected.push_back(std::move(object));
  }
  EXPECT_EQ(json(decoded.events), json(expected));
  EXPECT_EQ(decoded.events[1]["ph"], "b");
  EXPECT_EQ(decoded.events[2]["ph"], "e");
  EXPECT_EQ(decoded.events[2]["args"]["bytes_received"], 640);
  EXPECT_EQ(decoded.events[0]["args"]["bytes"], -4096);
}

TEST(TimelineRecord, ACutFileDecodesItsWholeRecordsAndCountsTheCutOne) {
  const std::string whole = file_of(sample_events(), true);
  const size_t events = decode_process_file(whole).events.size();
  size_t previous = 0;
  for (size_t size = kFileMagic.size(); size < whole.size(); ++size) {
    const DecodedFile decoded = decode_process_file(std::string_view(whole).substr(0, size));
    EXPECT_FALSE(decoded.closed) << size;
    EXPECT_GE(decoded.events.size(), previous) << size;
    EXPECT_LE(decoded.events.size(), events) << size;
    previous = decoded.events.size();
  }
  EXPECT_EQ(previous, events) << "cut within the end record: every event read";
  // Cut within a record: the record dropped and counted.
  const DecodedFile early =
      decode_process_file(std::string_view(whole).substr(0, whole.size() / 4));
  EXPECT_EQ(early.dropped, 1u);
  EXPECT_FALSE(decode_process_file("not a process file").closed);
}

TEST(TimelineRecord, AMalformedRecordEndsDecodingThere) {
  std::vector<Event> events = sample_events();
  std::string bytes = file_of(events, true);
  // The last event's record: its arg count beyond kMaxArgs.
  const size_t last = bytes.size() - 48 - record_size(events.back());
  RecordHead head;
  std::memcpy(&head, bytes.data() + last, sizeof head);
  ASSERT_EQ(head.phase, 'M');
  head.arg_count = kMaxArgs + 1;
  std::memcpy(bytes.data() + last, &head, sizeof head);
  DecodedFile decoded = decode_process_file(bytes);
  EXPECT_EQ(decoded.dropped, 1u);
  EXPECT_FALSE(decoded.closed);
  EXPECT_EQ(decoded.events.size(), 5u) << "the four records before it, one of them two objects";
  // A size that is not a multiple of 8.
  head.arg_count = 1;
  head.size = 13;
  std::memcpy(bytes.data() + last, &head, sizeof head);
  EXPECT_EQ(decode_process_file(bytes).dropped, 1u);
}

TEST(TimelineRecord, AnAddressTheFileNeverDefinedReadsAsAQuestionMark) {
  Event event;
  event.reset('i', "tick", "test");
  event.add({"key", 1});
  std::vector<unsigned char> bytes(kFileMagic.begin(), kFileMagic.end());
  bytes.resize(bytes.size() + record_size(event));
  encode_record(bytes.data() + kFileMagic.size(), event);
  const DecodedFile decoded = decode_process_file(std::string(bytes.begin(), bytes.end()));
  ASSERT_EQ(decoded.events.size(), 1u);
  EXPECT_EQ(decoded.events[0]["cat"], "?");
  EXPECT_EQ(decoded.events[0]["args"]["?"], 1);
}

TEST(TimelineClock, CristiansEstimateUsesTheShortestRoundTrip) {
  EXPECT_EQ(estimate_clock_offset({}), std::nullopt);
  EXPECT_EQ(estimate_clock_offset({{100, 0, 50}}), std::nullopt);
  // Reference = local + 5000; the second sample's round trip (20) is the shortest.
  const auto offset =
      estimate_clock_offset({{0, 5000 + 40, 100}, {200, 5000 + 210, 220}, {300, 5000 + 390, 400}});
  ASSERT_TRUE(offset);
  EXPECT_EQ(offset->offset_ns, 5000);
  EXPECT_EQ(offset->error_ns, 10);
  // An asymmetric trip is off by at most the error.
  const auto skewed = estimate_clock_offset({{0, -7000 + 2, 10}});
  ASSERT_TRUE(skewed);
  EXPECT_LE(std::abs(skewed->offset_ns - -7000), skewed->error_ns);
}

TEST(TimelineClock, MeasuringAgainstAFakeReference) {
  constexpr int64_t kOffset = 123'456'789;
  const auto offset = measure_clock_offset([] { return now_ns() + kOffset; }, 5);
  ASSERT_TRUE(offset);
  EXPECT_LE(std::abs(offset->offset_ns - kOffset), offset->error_ns + 1);
  EXPECT_EQ(measure_clock_offset([] { return int64_t{0}; }, 0), std::nullopt);
}

TEST(TimelineClock, BarrierOffsetsPutEveryoneOnProcessZerosClock) {
  EXPECT_EQ(offsets_from_barrier({1000, 400, 2500}), (std::vector<int64_t>{0, 600, -1500}));
}

// A store in memory, as the ranks' threads share it; answers to rank 2 pass through a clock
// `skew_ns` ahead, as if rank 0 lived on another host.
class MemoryClockStore : public ClockStore {
 public:
  explicit MemoryClockStore(int64_t skew_ns) : skew_ns_(skew_ns) {}
  void set(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(mutex_);
    values_[key] = key.find("/2/answer/") != std::string::npos
                       ? std::to_string(std::stoll(value) + skew_ns_)
                       : value;
    changed_.notify_all();
  }
  std::string get(const std::string& key) override {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return values_.count(key) != 0; });
    return values_[key];
  }

 private:
  const int64_t skew_ns_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
};

TEST(TimelineClock, OffsetsMeasuredThroughTheStore) {
  stop();  // no timeline: the offsets are not recorded, and the wall clock stands in for rank 0's
  constexpr int64_t kSkew = 7'000'000;
  MemoryClockStore store(kSkew);
  constexpr int kWorld = 3;
  std::vector<ClockOffset> offsets(kWorld);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < kWorld; ++rank) {
    ranks.emplace_back([&, rank] {
      offsets[rank] = sync_clock_through_store(store, "gradwire/timeline/clock/0", rank, {1, 2}, 4);
    });
  }
  for (std::thread& rank : ranks) rank.join();
  // One process, one clock: rank 1 finds rank 0's offset, rank 2 that plus the skew.
  const int64_t reference = clock_offset_ns();
  // (The wall clock is read afresh by each call: allow it a millisecond of steps.)
  EXPECT_LE(std::abs(offsets[0].offset_ns - reference), 1'000'000);
  EXPECT_EQ(offsets[0].error_ns, 0);
  EXPECT_LE(std::abs(offsets[1].offset_ns - reference), offsets[1].error_ns + 1'000'000);
  EXPECT_LE(std::abs(offsets[2].offset_ns - (reference + kSkew)), offsets[2].error_ns + 1'000'000);
  EXPECT_LT(offsets[2].error_ns, 50'000'000) << "the shortest of 4 round trips in memory";
}

TEST(TimelineClock, RanksOfRankZerosKernelAreNotMeasured) {
  EXPECT_EQ(ranks_to_measure({"a/1", "a/1", "b/2", "", "a/1"}), (std::vector<int>{2, 3}));
  EXPECT_EQ(ranks_to_measure({"a/1"}), std::vector<int>{});
  EXPECT_EQ(ranks_to_measure({"", ""}), std::vector<int>{1});
  // A rank left out returns at once, without a round trip: only rank 2 asks, and rank 0 answers
  // it alone (a rank 1 that asked would wait forever on its answer).
  stop();
  MemoryClockStore store(0);
  std::vector<ClockOffset> offsets(3);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 3; ++rank) {
    ranks.emplace_back([&, rank] {
      offsets[rank] = sync_clock_through_store(store, "gradwire/timeline/clock/1", rank, {2}, 2);
    });
  }
  for (std::thread& rank : ranks) rank.join();
  EXPECT_EQ(offsets[1].error_ns, 0);
  EXPECT_GE(offsets[2].error_ns, 0);
}

TEST(TimelineClock, TheFileRecordsTheOffsets) {
  TempDir dir;
  const std::string path = dir.path + "/clock.gwtl";
  start(path, "rank 1");
  const int64_t at_start = job_clock_ns() - now_ns();
  set_clock_offset({-42, 7}, "rank 0 through the store");
  EXPECT_NEAR(static_cast<double>(job_clock_ns() - now_ns()), -42.0, 1e6);
  stop();
  std::vector<json> clocks;
  for (const json& event : with_phase(read_trace(path), "M")) {
    if (event["name"] == "gradwire_clock") clocks.push_back(event["args"]);
  }
  ASSERT_EQ(clocks.size(), 2u);
  EXPECT_NEAR(static_cast<double>(clocks[0]["offset_ns"].get<int64_t>()),
              static_cast<double>(at_start), 1e6);
  EXPECT_EQ(clocks[1]["offset_ns"], -42);
  EXPECT_EQ(clocks[1]["error_ns"], 7);
  EXPECT_EQ(clocks[1]["source"], "rank 0 through the store");
}

}  // namespace timeline_test
}  // namespace gradwire::timeline
