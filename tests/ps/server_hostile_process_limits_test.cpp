// Issue 37's demonstrations against a real gradwire-ps-server process (server_hostile_process.h),
// continued: 400 waiting lookups, a Batch of 2,000 large lookups, 800k one-id pushes in Batches.
// Each gets a clear refusal naming its limit, the victim table stays bit-for-bit as it was, the
// server's threads and peak memory stay bounded (figures printed for the record), and it exits
// cleanly after SIGTERM: within its 2 s grace even with the refused client's calls still waiting.
#include <grpcpp/completion_queue.h>

#include <algorithm>
#include <thread>

#include "server_hostile_process.h"

namespace gradwire::ps::server_hostile_process_test {

// Lookups in flight on one completion queue, each a Batch of one lookup. However the test ends, every call is cancelled and
// its completion collected before the queue goes.
struct Storm {
  struct Call {
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::ClientAsyncResponseReader<v1::BatchResponse>> reader;
    v1::BatchResponse response;
    grpc::Status status;
    bool done = false;
  };
  grpc::CompletionQueue queue;
  std::vector<Call> calls;
  int open = 0;

  void start(ServerClient& client, const v1::LookupRequest& lookup, size_t count) {
    v1::BatchRequest request;
    *request.add_lookups() = lookup;
    calls.resize(count);
    for (size_t i = 0; i < count; ++i) {
      calls[i].context = client.context(30s);
      calls[i].reader = client.stub().AsyncBatch(calls[i].context.get(), request, &queue);
      calls[i].reader->Finish(&calls[i].response, &calls[i].status, reinterpret_cast<void*>(i));
      ++open;
    }
  }
  // Collects completions until `left` calls are open or `until` passes.
  void collect(int left, std::chrono::system_clock::time_point until) {
    void* tag = nullptr;
    bool ok = false;
    while (open > left && queue.AsyncNext(&tag, &ok, until) == grpc::CompletionQueue::GOT_EVENT) {
      calls[reinterpret_cast<uintptr_t>(tag)].done = true;
      --open;
    }
  }
  ~Storm() {
    for (Call& call : calls) {
      if (!call.done) call.context->TryCancel();
    }
    collect(0, std::chrono::system_clock::now() + 30s);
    queue.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (queue.Next(&tag, &ok)) {
    }
  }
};

// Finding 3: 400 lookups of a sync dense table never assigned. --max-waiting-steps of them wait,
// the others are refused naming it; the server's threads stay bounded. SIGTERM with the waiting
// ones still in flight: they end, and the server exits cleanly within its 2 s grace (the grace is
// what gRPC waits for connections still open; 250 ms for the exit itself).
TEST_F(HostileProcess, WaitingLookupsAreCountedAndStopOnTime) {
  TableConfig dense = table_config("never", 4, 4, UpdateMode::kSync);
  dense.kind = TableKind::kDense;
  v1::CreateTableResponse created;
  ASSERT_TRUE(client_->create(dense, 0, 1, &created).ok());
  ASSERT_TRUE(created.awaiting_values());
  expect_victim_unchanged();
  const Usage before = usage();
  Storm storm;
  storm.start(*client_, lookup_request("never", at::arange(4, at::kLong)), 400);
  int64_t peak_threads = before.threads;
  const auto until = std::chrono::system_clock::now() + 20s;
  while (storm.open > kMaxWaiting && std::chrono::system_clock::now() < until) {
    storm.collect(storm.open - 1, until);
    peak_threads = std::max(peak_threads, usage().threads);
  }
  ASSERT_EQ(storm.open, kMaxWaiting) << "lookups still open besides those that may wait";
  int limited = 0;
  for (const Storm::Call& call : storm.calls) {
    if (!call.done) continue;
    EXPECT_TRUE(refused(call.status, grpc::StatusCode::RESOURCE_EXHAUSTED, "--max-waiting-steps"));
    limited += call.status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
  }
  EXPECT_EQ(limited, 400 - kMaxWaiting);
  std::this_thread::sleep_for(500ms);
  const Usage after = usage();
  print("400 lookups of a dense table never assigned (" + std::to_string(limited) +
            " refused, " + std::to_string(kMaxWaiting) + " waiting; peak " +
            std::to_string(peak_threads) + " threads)",
        before, after);
  EXPECT_LE(after.threads, before.threads + kMaxWaiting + 32);
  EXPECT_LE(peak_threads, before.threads + 200) << "400 calls: 410 threads before the cap";
  expect_victim_unchanged();
  stop(2s);
  storm.collect(0, std::chrono::system_clock::now() + 5s);
  EXPECT_EQ(storm.open, 0) << "waiting lookups outlived the server";
}

// Finding 4: with --max-message-bytes 1 MiB, one Batch of 2,000 lookups of a 1 MB row (each fine
// alone) is refused whole before any part runs, as is one of 4,097 parts; the peak RSS stays.
TEST_F(HostileProcess, ABatchOfLargeLookupsIsRefusedWhole) {
  ASSERT_TRUE(client_->create(table_config("wide", 4, 250000)).ok());
  const Usage before = usage();
  reset_peak();
  v1::BatchRequest large;
  for (int i = 0; i < 2000; ++i) *large.add_lookups() = lookup_request("wide", ids({i % 4}));
  v1::BatchResponse answer;
  EXPECT_TRUE(refused(client_->stub().Batch(client_->context(30s).get(), large, &answer),
                      grpc::StatusCode::RESOURCE_EXHAUSTED, "max_message_bytes 1048576"));
  v1::BatchRequest many;
  for (int i = 0; i < 4097; ++i) *many.add_lookups() = lookup_request("victim", ids({i % 64}));
  EXPECT_TRUE(refused(client_->stub().Batch(client_->context(30s).get(), many, &answer),
                      grpc::StatusCode::RESOURCE_EXHAUSTED, "4096"));
  const Usage after = usage();
  print("a Batch of 2,000 lookups of 1 MB rows", before, after);
  EXPECT_LT((after.hwm_kb - before.rss_kb) * 1024, 64 * kMiB) << "2,000 MiB before the budget";
  v1::BatchRequest one;
  *one.add_lookups() = lookup_request("wide", ids({3}));
  EXPECT_TRUE(client_->stub().Batch(client_->context().get(), one, &answer).ok());
  expect_victim_unchanged();
  client_.reset();
  stop(2s);
}

// Finding 5: one-id pushes to two sync tables in Batches. Within the 4096 parts, each push counts
// its storage and 1 KiB, so --max-pending-bytes and --max-total-pending-bytes refuse them after
// about 1,000 and 500 and the peak RSS stays near the caps (160k pushes offered); 10 Batches of
// 80,000 (800k pushes) are refused whole by the part cap, costing only their parsing. A newer
// attempt's first push releases what the discarded step held.
TEST_F(HostileProcess, OneIdPushBatchesStayWithinThePendingCaps) {
  ASSERT_TRUE(client_->create(table_config("pend-a", 1000, 1, UpdateMode::kSync, 2)).ok());
  ASSERT_TRUE(client_->create(table_config("pend-b", 1000, 1, UpdateMode::kSync, 2)).ok());
  const auto batch = [&](const std::string& table, int pushes, int64_t restart = 0) {
    v1::BatchRequest request;
    for (int i = 0; i < pushes; ++i) {
      *request.add_pushes() = push_request(table, 0, 0, ids({i % 1000}), at::ones({1, 1}), restart);
    }
    v1::BatchResponse answer;
    return client_->stub().Batch(client_->context(30s).get(), request, &answer);
  };
  const Usage before = usage();
  reset_peak();
  EXPECT_TRUE(refused(batch("pend-a", 4096), grpc::StatusCode::RESOURCE_EXHAUSTED,
                      "--max-pending-bytes"));
  EXPECT_TRUE(refused(batch("pend-b", 4096), grpc::StatusCode::RESOURCE_EXHAUSTED,
                      "--max-total-pending-bytes"));
  for (int call = 0; call < 38; ++call) {
    EXPECT_EQ(batch(call % 2 ? "pend-b" : "pend-a", 4096).error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  const Usage held = usage();
  print("40 Batches of 4,096 one-id pushes", before, held);
  EXPECT_LT((held.hwm_kb - before.rss_kb) * 1024, 24 * kMiB) << "about 100 MiB if undercounted";

  reset_peak();
  for (int call = 0; call < 10; ++call) {  // 800k pushes: each call refused whole
    EXPECT_TRUE(refused(batch(call % 2 ? "pend-b" : "pend-a", 80000),
                        grpc::StatusCode::RESOURCE_EXHAUSTED, "4096"));
  }
  const Usage parsed = usage();
  print("then 10 Batches of 80,000 one-id pushes", held, parsed);
  EXPECT_LT((parsed.hwm_kb - held.rss_kb) * 1024, 96 * kMiB) << "697 MiB before the caps";

  EXPECT_TRUE(refused(batch("pend-b", 400), grpc::StatusCode::RESOURCE_EXHAUSTED,
                      "--max-total-pending-bytes"));
  EXPECT_TRUE(batch("pend-a", 1, 1).ok());  // attempt 1 discards pend-a's step and its pushes
  EXPECT_TRUE(batch("pend-b", 400).ok());
  expect_victim_unchanged();
  client_.reset();
  stop(2s);
}

}  // namespace gradwire::ps::server_hostile_process_test
