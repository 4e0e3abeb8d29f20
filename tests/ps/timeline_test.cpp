// Parameter servers on the timeline (docs/timeline.md, category "ps"): a client's calls and a
// server's served calls, applies, step waits and checkpoint writes, a failed and a retried call,
// a restarted server's instant, and the names of gradwire-ps-server processes. Servers and
// clients run in this process, which records one timeline file; the test reads it back.
#include "gradwire/common/timeline.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "client_test_support.h"
#include "common/timeline_merge.h"
#include "gradwire/common/error.h"
#include "gradwire_ps_server/server_label.h"

namespace gradwire::ps {
namespace {

namespace ps_timeline_test {

namespace fs = std::filesystem;
using nlohmann::json;

struct TimelineDir {
  TimelineDir() {
    std::string pattern = (fs::temp_directory_path() / "gradwire-ps-timeline-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TimelineDir() {
    timeline::stop();
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string path;
};

// The events of a closed process file, as merge reads it.
std::vector<json> read_events(const std::string& path) {
  timeline::ProcessTrace trace = timeline::read_process_trace(path);
  EXPECT_TRUE(trace.closed && trace.dropped_lines == 0) << path;
  return std::move(trace.events);
}

// The events of phase `phase` named `name`.
std::vector<json> named(const std::vector<json>& events, const std::string& phase,
                        const std::string& name) {
  std::vector<json> found;
  for (const json& event : events) {
    if (event.value("ph", "") == phase && event.value("name", "") == name) found.push_back(event);
  }
  return found;
}

// The async span ends ("e") with the id of `begin`.
json end_of(const std::vector<json>& events, const json& begin) {
  for (const json& event : events) {
    if (event.value("ph", "") == "e" && event.value("id", json()) == begin["id"]) return event;
  }
  return json();
}

ServerOptions server_options(const std::string& checkpoint_dir) {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.token = testing::kClientToken;
  options.checkpoint_dir = checkpoint_dir;
  options.timeline_name = "ps server 0";
  return options;
}

}  // namespace ps_timeline_test

using nlohmann::json;
using ps_timeline_test::end_of;
using ps_timeline_test::named;
using ps_timeline_test::read_events;

TEST(PsTimeline, CallsServedCallsAppliesStepWaitsAndCheckpointsAreRecorded) {
  ps_timeline_test::TimelineDir dir;
  const std::string file = dir.path + "/test.gwtl";
  timeline::start(file, "ps timeline test");
  const std::string checkpoints = dir.path + "/checkpoints";
  {
    std::unique_ptr<Server> server = start_server(ps_timeline_test::server_options(checkpoints));
    // Two trainers of a sync table, one over its call channel and one over gRPC: the first to
    // finish its step waits for the other.
    testing::run_trainers(2, [&](int trainer) {
      ClientOptions options = testing::client_options({server->address()}, trainer, 2);
      options.shared_memory = trainer == 0;
      const std::shared_ptr<Client> client = connect(options);
      client->create_table(testing::small_table("emb", 16, 4, UpdateMode::kSync, /*trainers=*/2));
      const at::Tensor ids = at::arange(6, at::kLong) * (trainer + 1);
      client->lookup("emb", ids);
      client->push("emb", ids, at::ones({6, 4}));
      client->step();
    });
    const std::shared_ptr<Client> client =
        connect(testing::client_options({server->address()}, 0, 2));
    client->checkpoint();
    server->shutdown(std::chrono::milliseconds(500));
  }
  {
    // Started again on its checkpoints: a restart. Its shutdown's checkpoint fails: a folder
    // holding a file stands where its file goes.
    std::unique_ptr<Server> server = start_server(ps_timeline_test::server_options(checkpoints));
    const std::string in_the_way = checkpoints + "/emb.shard0of1.step1.gwps";
    ps_timeline_test::fs::remove(in_the_way);
    ps_timeline_test::fs::create_directories(in_the_way + "/taken");
    server->shutdown(std::chrono::milliseconds(500));
  }
  {
    // A server that is not there: one retry, then the failure.
    ClientOptions options = testing::client_options({"127.0.0.1:1"}, 0, 1);
    options.max_retries = 1;
    options.retry_backoff = std::chrono::milliseconds(1);
    options.call_deadline = std::chrono::milliseconds(2000);
    options.shared_memory = false;
    const std::shared_ptr<Client> client = connect(options);
    EXPECT_THROW(client->create_table(testing::small_table("emb", 16, 4, UpdateMode::kSync, 1)),
                 Error);
  }
  timeline::stop();
  const std::vector<json> events = read_events(file);

  // The client: each call to the server an async span with what it carried, both transports.
  std::set<std::string> transports;
  for (const char* kind : {"lookup server 0", "push server 0", "step server 0"}) {
    const std::vector<json> begins = named(events, "b", kind);
    ASSERT_EQ(begins.size(), 2u) << kind;
    for (const json& begin : begins) {
      EXPECT_EQ(begin["cat"], "ps");
      EXPECT_EQ(begin["args"]["server"], 0);
      EXPECT_EQ(begin["args"]["table"], "emb");
      EXPECT_GT(begin["args"]["bytes_sent"].get<int64_t>(), 0) << kind;
      transports.insert(begin["args"]["transport"].get<std::string>());
      const json end = end_of(events, begin);
      ASSERT_TRUE(end.is_object()) << kind;
      EXPECT_TRUE(end["args"].contains("bytes_received")) << end;
    }
  }
  EXPECT_EQ(transports, (std::set<std::string>{"channel", "grpc"}));
  for (const json& begin : named(events, "b", "lookup server 0")) {
    EXPECT_EQ(begin["args"]["ids"], 6);
    EXPECT_GE(end_of(events, begin)["args"]["bytes_received"].get<int64_t>(), 6 * 4 * 4);
  }
  for (const char* name : {"lookup", "push", "step", "create table", "checkpoint"}) {
    EXPECT_FALSE(named(events, "X", name).empty()) << name;
  }

  // The server: its calls served, on threads named after it.
  const std::vector<json> served = named(events, "X", "serve Batch");
  ASSERT_GE(served.size(), 6u);  // lookups, pushes and steps of two trainers
  transports.clear();
  for (const json& call : served) {
    EXPECT_EQ(call["args"]["table"], "emb");
    EXPECT_GT(call["args"]["bytes_received"].get<int64_t>(), 0);
    EXPECT_TRUE(call["args"].contains("bytes_sent"));
    transports.insert(call["args"]["transport"].get<std::string>());
  }
  EXPECT_EQ(transports, (std::set<std::string>{"channel", "grpc"}));
  std::set<std::string> threads;
  for (const json& event : named(events, "M", "thread_name")) {
    threads.insert(event["args"]["name"].get<std::string>());
  }
  EXPECT_EQ(threads.count("ps server 0 calls"), 1u);
  EXPECT_EQ(threads.count("ps channel calls"), 1u);
  // The step applied once, with what it applied; the first trainer there waited.
  const std::vector<json> applies = named(events, "X", "apply");
  ASSERT_EQ(applies.size(), 1u);
  EXPECT_EQ(applies[0]["args"]["table"], "emb");
  EXPECT_EQ(applies[0]["args"]["step"], 1);
  EXPECT_GT(applies[0]["args"]["rows"].get<int64_t>(), 0);
  EXPECT_EQ(applies[0]["args"]["bytes"].get<int64_t>(),
            applies[0]["args"]["rows"].get<int64_t>() * 4 * 4);
  const std::vector<json> waits = named(events, "X", "step wait");
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0]["args"]["applied"], true);
  EXPECT_FALSE(named(events, "C", "pending bytes emb").empty());
  // The checkpoint: one file, and the call that wrote it (the shutdown writes one more).
  const std::vector<json> writes = named(events, "X", "checkpoint write");
  ASSERT_GE(writes.size(), 1u);
  EXPECT_EQ(writes[0]["args"]["table"], "emb");
  EXPECT_GT(writes[0]["args"]["bytes"].get<int64_t>(), 0);
  EXPECT_NE(writes[0]["args"]["path"].get<std::string>().find(".gwps"), std::string::npos);
  const std::vector<json> checkpoint = named(events, "X", "checkpoint");
  ASSERT_FALSE(checkpoint.empty());
  EXPECT_EQ(checkpoint[0]["args"]["path"], checkpoints);
  EXPECT_EQ(checkpoint[0]["args"]["tables"], 1);
  // The server started again restored the table.
  const std::vector<json> restarts = named(events, "i", "restart");
  ASSERT_EQ(restarts.size(), 1u);
  EXPECT_EQ(restarts[0]["args"]["tables"], 1);
  EXPECT_EQ(restarts[0]["args"]["restored"], "emb step 1");
  const std::vector<json> failed_writes = named(events, "i", "checkpoint write failed");
  ASSERT_EQ(failed_writes.size(), 1u);
  EXPECT_EQ(failed_writes[0]["args"]["table"], "emb");
  EXPECT_FALSE(failed_writes[0]["args"]["error"].get<std::string>().empty());

  // The dead server: a retry, then the failure naming it.
  const std::vector<json> retries = named(events, "i", "ps call retry");
  ASSERT_EQ(retries.size(), 1u);
  EXPECT_EQ(retries[0]["args"]["address"], "127.0.0.1:1");
  const std::vector<json> failures = named(events, "i", "ps call failed");
  ASSERT_EQ(failures.size(), 2u);  // the first try and the retry
  for (const json& failure : failures) {
    EXPECT_EQ(failure["s"], "p");
    EXPECT_EQ(failure["args"]["address"], "127.0.0.1:1");
    EXPECT_EQ(failure["args"]["method"], "CreateTable");
    EXPECT_EQ(failure["args"]["status"], "UNAVAILABLE");
    EXPECT_TRUE(failure["args"].contains("waited_ms"));
  }
}

TEST(PsTimeline, AServedCallThatFailsNamesItsStatusAndEachServingThreadIsNamedOnce) {
  ps_timeline_test::TimelineDir dir;
  const std::string file = dir.path + "/test.gwtl";
  timeline::start(file, "ps timeline test");
  {
    std::unique_ptr<Server> server = start_server(ps_timeline_test::server_options(""));
    ClientOptions options = testing::client_options({server->address()}, 0, 1);
    options.shared_memory = false;
    const std::shared_ptr<Client> client = connect(options);
    client->create_table(testing::small_table("emb", 16, 4, UpdateMode::kAsync, 1));
    client->lookup("emb", at::arange(4, at::kLong));
    options.token = "not the job's token";
    options.max_retries = 0;
    EXPECT_THROW(connect(options)->create_table(
                     testing::small_table("other", 16, 4, UpdateMode::kAsync, 1)),
                 Error);
    server->shutdown(std::chrono::milliseconds(500));
  }
  timeline::stop();
  const std::vector<json> events = read_events(file);

  std::set<int> serving_threads;
  int failed = 0;
  for (const json& call : events) {
    if (call.value("ph", "") != "X" || call.value("name", "").rfind("serve ", 0) != 0) continue;
    serving_threads.insert(call["tid"].get<int>());
    if (call["args"]["table"] == "other") {
      ++failed;
      EXPECT_EQ(call["name"], "serve CreateTable");
      EXPECT_EQ(call["args"]["status"], "UNAUTHENTICATED") << call;
    } else {
      EXPECT_FALSE(call["args"].contains("status")) << call;  // only a failed call names one
    }
  }
  EXPECT_EQ(failed, 1);
  ASSERT_FALSE(serving_threads.empty());
  std::map<int, std::vector<std::string>> names_of;
  for (const json& event : named(events, "M", "thread_name")) {
    names_of[event["tid"].get<int>()].push_back(event["args"]["name"].get<std::string>());
  }
  for (const int tid : serving_threads) {
    EXPECT_EQ(names_of[tid], std::vector<std::string>{"ps server 0 calls"}) << tid;
  }
}

TEST(PsTimeline, ServerProcessesAreNamedByTheirFirstServersIndex) {
  using ps_server::first_server_index;
  const std::string addrs = "127.0.0.1:5000,127.0.0.1:5001,127.0.0.1:5002";
  EXPECT_EQ(first_server_index(std::nullopt, {"127.0.0.1:5001", "127.0.0.1:5002"}, addrs), 1);
  EXPECT_EQ(first_server_index(3, {"127.0.0.1:5001"}, addrs), 3);             // --index decides
  EXPECT_EQ(first_server_index(std::nullopt, {"127.0.0.1:7000"}, addrs), 0);  // not the job's
  EXPECT_EQ(first_server_index(std::nullopt, {"127.0.0.1:0"}, ""), 0);        // alone
  EXPECT_EQ(ps_server::process_label(2, 1), "ps server 2");
  EXPECT_EQ(ps_server::process_label(0, 4), "ps servers 0-3");
  EXPECT_EQ(ps_server::server_timeline_name(5), "ps server 5");
  EXPECT_EQ(timeline::process_file("t.json", ps_server::process_label(2, 1)),
            "t.json.d/server-2.gwtl");
}

}  // namespace
}  // namespace gradwire::ps
