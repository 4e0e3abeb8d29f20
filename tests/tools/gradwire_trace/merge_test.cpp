// gradwire-trace merge (src/common/timeline_merge.h) on small inputs: truncated files, clock
// offsets, pids and async ids per process.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/timeline_merge.h"
#include "gradwire/common/error.h"
#include "gradwire/common/timeline.h"

namespace gradwire::timeline {
namespace merge_test {

using nlohmann::json;

// A process file as the recorder writes it: the clock offset, then `lines` (without their
// leading comma), closed or not.
std::string process_text(const std::string& label, int64_t offset_ns,
                         const std::vector<std::string>& lines, bool closed) {
  std::string text =
      R"([{"ph":"M","name":"process_name","pid":77,"tid":0,"args":{"name":")" + label + "\"}}\n";
  text += R"(,{"ph":"M","name":"gradwire_clock","pid":77,"tid":0,"args":{"offset_ns":)" +
          std::to_string(offset_ns) + R"(,"error_ns":0,"source":"test"}})" + "\n";
  for (const std::string& line : lines) text += "," + line + "\n";
  if (closed) text += "]\n";
  return text;
}

std::string read_text(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<json> named(const json& trace, const std::string& name) {
  std::vector<json> found;
  for (const json& event : trace["traceEvents"]) {
    if (event["name"] == name) found.push_back(event);
  }
  return found;
}

TEST(TraceMerge, ATruncatedFileKeepsItsWholeLines) {
  std::string text =
      process_text("rank 2", 0,
                   {R"({"ph":"X","name":"a","cat":"t","pid":77,"tid":5,"ts":10.000,"dur":1.000})",
                    R"({"ph":"X","name":"b","cat":"t","pid":77,"tid":5,"ts":12.000,"dur":1.000})"},
                   false);
  text += R"(,{"ph":"X","name":"c","cat":"t","pid":77,"ti)";  // SIGKILL mid-line
  const ProcessTrace process = parse_process_trace(text, "rank-2.json");
  EXPECT_FALSE(process.closed);
  EXPECT_EQ(process.dropped_lines, 1u);
  EXPECT_EQ(process.label, "rank 2");
  EXPECT_TRUE(process.has_clock);
  ASSERT_EQ(process.events.size(), 3u);  // process_name, a, b
  MergeSummary summary;
  const json trace = merge_traces({process}, &summary);
  EXPECT_EQ(summary.unclosed, 1u);
  EXPECT_EQ(summary.dropped_lines, 1u);
  ASSERT_EQ(named(trace, "a").size(), 1u);
  EXPECT_DOUBLE_EQ(named(trace, "a")[0]["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(named(trace, "b")[0]["ts"].get<double>(), 2.0);
  EXPECT_EQ(named(trace, "a")[0]["pid"], 1);
  EXPECT_EQ(named(trace, "a")[0]["tid"], 5);
}

TEST(TraceMerge, TwoProcessesWithAKnownOffsetLandOnOneClock) {
  // The same moment: rank 1's steady clock reads 1000 µs less than rank 0's job clock (its
  // offset is 1 ms larger). Both record an event at job time 5000 µs.
  const std::string rank0 = process_text(
      "rank 0", 0,
      {R"({"ph":"X","name":"allreduce","cat":"comm","pid":77,"tid":1,"ts":5000.5,"dur":10})"},
      true);
  const std::string rank1 = process_text(
      "rank 1", 1'000'000,
      {R"({"ph":"X","name":"allreduce","cat":"comm","pid":77,"tid":1,"ts":4000.5,"dur":10})",
       R"({"ph":"i","name":"timeout","cat":"comm","pid":77,"tid":1,"ts":4500,"s":"p"})"},
      true);
  // Given in the wrong order: rank 0 still gets pid 1.
  MergeSummary summary;
  const json trace = merge_traces(
      {parse_process_trace(rank1, "b.json"), parse_process_trace(rank0, "a.json")}, &summary);
  EXPECT_EQ(summary.processes, 2u);
  EXPECT_EQ(summary.unclosed, 0u);
  const auto allreduces = named(trace, "allreduce");
  ASSERT_EQ(allreduces.size(), 2u);
  EXPECT_EQ(allreduces[0]["pid"], 1);
  EXPECT_EQ(allreduces[1]["pid"], 2);
  EXPECT_DOUBLE_EQ(allreduces[0]["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(allreduces[1]["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(named(trace, "timeout")[0]["ts"].get<double>(), 499.5);
  const auto names = named(trace, "process_name");
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0]["args"]["name"], "rank 0");
  EXPECT_EQ(names[0]["pid"], 1);
  EXPECT_EQ(names[1]["args"]["name"], "rank 1");
  EXPECT_EQ(named(trace, "process_sort_index")[1]["args"]["sort_index"], 2);
  EXPECT_TRUE(named(trace, "gradwire_clock").empty());
}

TEST(TraceMerge, AsyncIdsAreRenumberedPerProcess) {
  const std::vector<std::string> lines = {
      R"({"ph":"b","name":"bucket","cat":"ddp","pid":77,"tid":1,"ts":1,"id":1})",
      R"({"ph":"e","name":"bucket","cat":"ddp","pid":77,"tid":2,"ts":2,"id":1})"};
  const json trace =
      merge_traces({parse_process_trace(process_text("rank 0", 0, lines, true), "a"),
                    parse_process_trace(process_text("rank 1", 0, lines, true), "b")});
  const auto buckets = named(trace, "bucket");
  ASSERT_EQ(buckets.size(), 4u);
  EXPECT_EQ(buckets[0]["id"], buckets[1]["id"]);
  EXPECT_EQ(buckets[2]["id"], buckets[3]["id"]);
  EXPECT_NE(buckets[0]["id"], buckets[2]["id"]);
}

TEST(TraceMerge, ProcessesAreOrderedRanksThenServersThenOthers) {
  std::vector<ProcessOrder> orders = {process_order("bench"),          process_order("ps server 0"),
                                      process_order("ps servers 4-7"), process_order("rank 10"),
                                      process_order("ps server 2"),    process_order("rank 2")};
  std::sort(orders.begin(), orders.end());
  EXPECT_EQ(orders[0].label, "rank 2");
  EXPECT_EQ(orders[1].label, "rank 10");
  EXPECT_EQ(orders[2].label, "ps server 0");
  EXPECT_EQ(orders[3].label, "ps server 2");
  EXPECT_EQ(orders[4].label, "ps servers 4-7");
  EXPECT_EQ(orders[5].label, "bench");
  EXPECT_EQ(process_order("ps servers 4-7").group, 1);
  EXPECT_EQ(process_order("ps servers 4-7").index, 4);
  EXPECT_EQ(process_order("rank x").group, 2);
  EXPECT_EQ(process_order("ps servers x").group, 2);
}

TEST(TraceMerge, MergeFilesWritesTheTraceAndNamesIncompleteFiles) {
  std::string pattern = (std::filesystem::temp_directory_path() / "gradwire-merge-XXXXXX").string();
  const std::string dir = ::mkdtemp(pattern.data());
  const std::string line = R"({"ph":"X","name":"a","cat":"t","pid":77,"tid":5,"ts":10,"dur":1})";
  std::ofstream(dir + "/rank-0.json") << process_text("rank 0", 0, {line}, true);
  std::ofstream(dir + "/rank-1.json") << process_text("rank 1", 0, {line}, false);
  const MergeReport report =
      merge_files({dir + "/rank-0.json", dir + "/rank-1.json"}, dir + "/out/trace.json");
  EXPECT_EQ(report.summary.processes, 2u);
  EXPECT_EQ(report.summary.events, 2u);  // one "a" each (process metadata is not counted)
  ASSERT_EQ(report.incomplete.size(), 1u);
  EXPECT_EQ(report.incomplete[0].label, "rank 1");
  EXPECT_EQ(describe(report.incomplete[0]),
            dir + "/rank-1.json (rank 1) was not closed (the process was killed?)");
  std::ifstream in(dir + "/out/trace.json");
  const json trace = json::parse(in);
  EXPECT_EQ(named(trace, "a").size(), 2u);
  EXPECT_THROW(merge_files({dir + "/absent.json"}, dir + "/x.json"), Error);
  std::filesystem::remove_all(dir);
}

TEST(TraceMerge, AFileWithoutMetadataIsNamedAfterItself) {
  const ProcessTrace process = parse_process_trace(
      R"([{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":1}])", "/tmp/x/server-3.json");
  EXPECT_EQ(process.label, "server-3");
  EXPECT_FALSE(process.has_clock);
  EXPECT_EQ(process.events.size(), 1u);
  EXPECT_EQ(parse_process_trace("", "empty.json").events.size(), 0u);
}

TEST(TraceMerge, FoldersListTheirJsonFiles) {
  std::string pattern = (std::filesystem::temp_directory_path() / "gradwire-merge-XXXXXX").string();
  const std::string dir = ::mkdtemp(pattern.data());
  for (const char* name : {"rank-1.json", "rank-0.json", "notes.txt"}) {
    std::ofstream(dir + "/" + name) << "[]\n";
  }
  const auto files = list_trace_files({dir, "/elsewhere/server-0.json"});
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0], dir + "/rank-0.json");
  EXPECT_EQ(files[1], dir + "/rank-1.json");
  EXPECT_EQ(files[2], "/elsewhere/server-0.json");
  std::filesystem::remove_all(dir);
}

// The streaming merge of binary process files (Note [streaming merge]) writes what merging the
// same files parsed whole does: every event, its pid, its timestamp on the job clock (to the
// nanosecond: the parsed path's doubles are off by picoseconds), its async id; and it reports the
// same cut and unclosed files.
TEST(TraceMerge, BinaryFilesMergeAsTheParsedTracesDo) {
  std::string pattern = (std::filesystem::temp_directory_path() / "gradwire-merge-XXXXXX").string();
  const std::string dir = ::mkdtemp(pattern.data());
  const auto record = [&](const std::string& label, int64_t offset_ns) {
    const std::string path = process_file(dir + "/trace.json", label, 0);
    start(path, label);
    set_clock_offset({offset_ns, 10}, "test");
    std::thread([] {
      name_thread("worker");
      for (int i = 0; i < 1500; ++i) {  // over a MiB of output: written in pieces
        const int64_t begin = now_ns();
        complete("step", "test", begin, begin + 1000 + i,
                 {{"i", i}, {"what", "a \"quoted\" text"}});
        async_span("call", "test", begin, begin + 2000, {{"i", i}}, {{"bytes", 64 * i}});
        instant("tick", "test", {{"i", i}});
      }
      counter("pending", {{"bytes", 5}});
    }).join();
    stop();
    return path;
  };
  const std::vector<std::string> files = {record("rank 1", 123'456'789), record("rank 0", -5'000),
                                          record("ps server 0", 0)};
  {  // the server's process killed mid-record: its file cut
    const std::string bytes = read_text(files[2]);
    std::ofstream(files[2], std::ios::binary | std::ios::trunc)
        << bytes.substr(0, bytes.size() / 2 + 3);
  }
  const MergeReport report = merge_files(files, dir + "/out/trace.json");
  std::ifstream in(dir + "/out/trace.json");
  const json streamed = json::parse(in);
  std::vector<ProcessTrace> parsed;
  for (const std::string& file : files) parsed.push_back(read_process_trace(file));
  MergeSummary summary;
  const json whole = merge_traces(parsed, &summary);

  EXPECT_EQ(report.summary.processes, 3u);
  EXPECT_EQ(report.summary.events, summary.events);
  EXPECT_EQ(report.summary.unclosed, 1u);
  EXPECT_EQ(report.summary.dropped_lines, summary.dropped_lines);
  ASSERT_EQ(report.incomplete.size(), 1u);
  EXPECT_EQ(report.incomplete[0].label, "ps server 0");
  EXPECT_EQ(streamed["otherData"], whole["otherData"]);
  EXPECT_EQ(streamed["displayTimeUnit"], "ns");
  const json& a = streamed["traceEvents"];
  const json& b = whole["traceEvents"];
  ASSERT_EQ(a.size(), b.size());
  EXPECT_GT(a.size(), size_t{2000});
  for (size_t i = 0; i < a.size(); ++i) {
    json x = a[i];
    json y = b[i];
    if (x.contains("ts") || y.contains("ts")) {
      EXPECT_NEAR(x["ts"].get<double>(), y["ts"].get<double>(), 1e-3) << x << "\n" << y;
      x.erase("ts");
      y.erase("ts");
    }
    ASSERT_EQ(x, y) << "event " << i;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace merge_test
}  // namespace gradwire::timeline
