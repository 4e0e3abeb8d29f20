// The per-rank summary of a merged trace (harness/trace_summary.h) on synthetic traces.
#include "harness/trace_summary.h"

#include <gtest/gtest.h>

#include <sstream>

#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

using nlohmann::json;

json process_name(int pid, const std::string& name) {
  return {
      {"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", name}}}};
}
json span(int pid, int tid, const std::string& name, const std::string& cat, double ts,
          double dur) {
  return {{"ph", "X"},  {"name", name}, {"cat", cat}, {"pid", pid},
          {"tid", tid}, {"ts", ts},     {"dur", dur}};
}
json async(const char* ph, int pid, int tid, const std::string& name, const std::string& cat,
           int id, double ts) {
  return {{"ph", ph},   {"name", name}, {"cat", cat}, {"pid", pid},
          {"tid", tid}, {"id", id},     {"ts", ts}};
}

TEST(TraceSummary, IntervalUnionsIntersectionsAndDifferences) {
  const TraceIntervals u = trace_union({{5, 8}, {0, 2}, {1, 3}, {8, 9}, {4, 4}});
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].begin_us, 0);
  EXPECT_EQ(u[0].end_us, 3);
  EXPECT_EQ(u[1].begin_us, 5);
  EXPECT_EQ(u[1].end_us, 9);
  EXPECT_DOUBLE_EQ(trace_length_us(u), 7);
  EXPECT_DOUBLE_EQ(trace_length_us(trace_intersect(u, {{2, 6}})), 2);
  const TraceIntervals rest = trace_subtract(u, {{1, 2}, {6, 7}, {8.5, 20}});
  EXPECT_DOUBLE_EQ(trace_length_us(rest), 3 - 1 + 4 - 1 - 0.5);
  EXPECT_EQ(rest.size(), 4u);
}

// Rank 0: two steps of forward 10 + backward 20 us; a bucket allreduce (async) from 15 to 40 of
// each step, its comm hook 2 us inside backward, ddp wait 30-40; a synchronous broadcast of 3 us
// in forward; a data wait before each step. Rank 1 has no forward (ps-like).
json synthetic_trace() {
  json events = json::array();
  events.push_back(process_name(1, "rank 0"));
  events.push_back(process_name(2, "rank 1"));
  events.push_back(process_name(3, "ps server 0"));
  events.push_back(process_name(4, "bench"));
  for (int step = 0; step < 2; ++step) {
    const double t = 100.0 * step;
    events.push_back(span(1, 11, "data wait", "data", t - 5, 5));
    events.push_back(span(1, 11, "forward", "ddp", t, 10));
    events.push_back(span(1, 11, "backward", "ddp", t + 10, 20));
    events.push_back(span(1, 11, "comm hook", "ddp", t + 14, 2));
    events.push_back(span(1, 11, "ddp wait", "ddp", t + 30, 10));
    events.push_back(span(1, 11, "optimizer", "train", t + 40, 5));
    events.push_back(async("b", 1, 11, "bucket 0", "ddp", step + 1, t + 15));
    events.push_back(async("e", 1, 11, "bucket 0", "ddp", step + 1, t + 40));
    // The bucket's allreduce (asynchronous: inside the bucket), and a broadcast of buffers in
    // forward that the thread waits for (synchronous: exposed).
    events.push_back(async("b", 1, 11, "allreduce", "comm", 10 + step, t + 16));
    events.push_back(async("e", 1, 11, "allreduce", "comm", 10 + step, t + 39));
    events.push_back(async("b", 1, 11, "broadcast", "comm", 20 + step, t + 2));
    events.push_back(async("e", 1, 11, "broadcast", "comm", 20 + step, t + 5));
  }
  // Rank 1: a training thread with a PS lookup (exposed) and a step wait, no forward.
  events.push_back(span(2, 21, "lookup", "ps", 0, 10));
  events.push_back(span(2, 21, "apply grads", "train", 10, 30));
  events.push_back(span(2, 21, "step wait", "ps", 40, 10));
  events.push_back(async("b", 2, 21, "allreduce", "comm", 1, 45));
  events.push_back(async("e", 2, 21, "allreduce", "comm", 1, 60));
  // The server: two applies that overlap on two threads, a wait that is not busy time.
  events.push_back(span(3, 31, "apply", "ps", 0, 10));
  events.push_back(span(3, 32, "apply", "ps", 5, 10));
  events.push_back(span(3, 31, "step wait", "ps", 20, 30));
  events.push_back(span(4, 41, "forward", "ddp", 0, 1000));  // not a rank: ignored
  return {{"traceEvents", events}};
}

TEST(TraceSummary, RanksAsUnionsOverTheirTrainingThread) {
  const TraceSummary summary = summarize_trace(synthetic_trace(), "synthetic");
  ASSERT_EQ(summary.ranks.size(), 2u);
  const RankTimeSummary& r0 = summary.ranks[0];
  EXPECT_EQ(r0.process, "rank 0");
  EXPECT_EQ(r0.steps, 2);
  EXPECT_EQ(r0.compute_from, "forward/backward");
  // Window: the first data wait (-5) to the last optimizer's end (145).
  EXPECT_NEAR(r0.window_s * 1e6, 150, 1e-9);
  // Per step: forward+backward 30 less the comm hook 2 and the broadcast 3 = 25.
  EXPECT_NEAR(r0.compute_s * 1e6, 50, 1e-9);
  // ddp wait 10 + comm hook 2 + broadcast 3 per step.
  EXPECT_NEAR(r0.exposed_s * 1e6, 30, 1e-9);
  // The bucket from 15 to 40 overlaps compute on 15..30 less the hook's 15..16: 14 per step.
  EXPECT_NEAR(r0.hidden_s * 1e6, 28, 1e-9);
  EXPECT_NEAR(r0.waits_s * 1e6, 10, 1e-9);
  // The rest: optimizer 5 per step and the gaps between steps (45..95): 150 - 50 - 30 - 10.
  EXPECT_NEAR(r0.other_s * 1e6, 60, 1e-9);

  const RankTimeSummary& r1 = summary.ranks[1];
  EXPECT_EQ(r1.steps, 0);
  EXPECT_EQ(r1.compute_from, "window");
  EXPECT_NEAR(r1.window_s * 1e6, 50, 1e-9);  // its spans: 0..50 (the allreduce is async)
  // Exposed: the lookup (10) and the synchronous allreduce on the thread (45..50 in the window),
  // which overlaps the step wait: the wait keeps only 40..45.
  EXPECT_NEAR(r1.exposed_s * 1e6, 15, 1e-9);
  EXPECT_NEAR(r1.waits_s * 1e6, 5, 1e-9);
  EXPECT_NEAR(r1.compute_s * 1e6, 30, 1e-9);
  EXPECT_NEAR(r1.hidden_s * 1e6, 0, 1e-9);

  ASSERT_EQ(summary.servers.size(), 1u);
  EXPECT_EQ(summary.servers[0].process, "ps server 0");
  EXPECT_EQ(summary.servers[0].calls, 2);
  EXPECT_NEAR(summary.servers[0].busy_s * 1e6, 15, 1e-9);
  EXPECT_NEAR(summary.servers[0].window_s * 1e6, 50, 1e-9);
}

TEST(TraceSummary, JsonRoundTripAndTable) {
  const TraceSummary summary = summarize_trace(synthetic_trace(), "synthetic");
  const TraceSummary back = trace_summary_from_json(to_json(summary), "doc");
  ASSERT_EQ(back.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(back.ranks[0].hidden_s, summary.ranks[0].hidden_s);
  EXPECT_EQ(back.servers.at(0).calls, 2);
  std::ostringstream out;
  print_trace_summary(out, back, "where the time went");
  const std::string text = out.str();
  EXPECT_NE(text.find("where the time went"), std::string::npos);
  EXPECT_NE(text.find("window ms"), std::string::npos) << text;  // rank 1 counted no steps
  EXPECT_NE(text.find("rank 1"), std::string::npos);
  EXPECT_NE(text.find("ps server 0"), std::string::npos);
  EXPECT_THROW(trace_summary_from_json(json{{"ranks", 3}}, "doc"), InvalidArgument);
  EXPECT_THROW(summarize_trace(json::array(), "x.json"), InvalidArgument);
  // A rank without spans has no line; a trace without any says so.
  const json quiet = {{"traceEvents", json::array({process_name(1, "rank 0")})}};
  EXPECT_TRUE(summarize_trace(quiet, "q").ranks.empty());
  std::ostringstream none;
  print_trace_summary(none, summarize_trace(quiet, "q"), "t");
  EXPECT_NE(none.str().find("no rank or server recorded a span"), std::string::npos);
}

}  // namespace
}  // namespace gradwire::bench
