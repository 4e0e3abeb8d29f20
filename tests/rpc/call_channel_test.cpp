// Calls over shared memory (rpc/call_channel.h): answers and statuses come back in order with more
// calls in flight than slots; what the channel refuses to carry; a call the server never answers
// is a deadline error that breaks the channel; a server process that exits is named; the server
// stops serving a channel the trainer closed, and the hub's threads end; a region that is not a
// channel is refused; one thread serves a trainer's channels to several servers, and a blocked
// call hands the others to another thread.
#include "rpc/call_channel.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "common/futex.h"
#include "error_text.h"
#include "rpc/channel_layout.h"

namespace gradwire::rpc {
namespace call_channel_test {  // not anonymous: unity batches (docs/architecture.md "Tests")

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::chrono::system_clock::time_point in(milliseconds time) {
  return std::chrono::system_clock::now() + time;
}

v1::LookupRequest lookup_of(const std::string& table, int64_t ids) {
  v1::LookupRequest request;
  request.set_table(table);
  request.mutable_ids()->add_shape(ids);
  return request;
}

// A handler answering a lookup with a tensor of the request's shape and the table's name as the
// tensor's bytes, or NOT_FOUND for the table "missing". The channel does not look into the
// messages: this test's lookups travel under its one method, kBatch.
grpc::Status echo(const ChannelCall& call, std::unique_ptr<google::protobuf::Message>* answer) {
  v1::LookupRequest request;
  if (call.method != ChannelMethod::kBatch || !request.ParseFromString(call.request)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "not a lookup");
  }
  if (request.table() == "missing") {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "table 'missing' does not exist");
  }
  auto response = std::make_unique<v1::LookupResponse>();
  *response->mutable_rows()->mutable_shape() = request.ids().shape();
  response->mutable_rows()->set_data(request.table());
  *answer = std::move(response);
  return grpc::Status::OK;
}

TEST(CallChannel, AnswersAndStatusesComeBackWithMoreCallsInFlightThanSlots) {
  SharedRegions regions;
  SharedRegionCache cache;
  ASSERT_TRUE(cache.probe(regions.probe()));
  auto client = std::make_shared<ChannelClient>(regions, "server-0");
  EXPECT_FALSE(client->usable()) << "no server attached yet";
  ChannelHub hub;
  const auto server = hub.attach(cache, client->reference(), echo);
  client->attached();
  ASSERT_TRUE(client->usable());

  constexpr int kCalls = 3 * kChannelSlots + 1;
  std::vector<v1::LookupResponse> responses(kCalls);
  std::vector<grpc::Status> statuses(kCalls);
  std::vector<uint64_t> tickets;
  for (int i = 0; i < kCalls; ++i) {
    const std::string table = i == 5 ? "missing" : "table-" + std::to_string(i);
    tickets.push_back(client->start(ChannelMethod::kBatch, lookup_of(table, i),
                                    in(milliseconds(10000)), 0, &responses[i], &statuses[i]));
    ASSERT_NE(tickets.back(), 0u) << "call " << i;
  }
  // Finished newest first: the older ones were answered while the slots were reused.
  for (int i = kCalls - 1; i >= 0; --i) {
    ASSERT_TRUE(client->finish(tickets[i], Clock::now() + milliseconds(10000))) << i;
  }
  for (int i = 0; i < kCalls; ++i) {
    if (i == 5) {
      EXPECT_EQ(statuses[i].error_code(), grpc::StatusCode::NOT_FOUND);
      EXPECT_EQ(statuses[i].error_message(), "table 'missing' does not exist");
      continue;
    }
    ASSERT_TRUE(statuses[i].ok()) << i << ": " << statuses[i].error_message();
    EXPECT_EQ(responses[i].rows().data(), "table-" + std::to_string(i));
    ASSERT_EQ(responses[i].rows().shape_size(), 1);
    EXPECT_EQ(responses[i].rows().shape(0), i);
  }
  EXPECT_TRUE(client->usable());
}

TEST(CallChannel, CallsLargerThanASlotAreLeftToGrpc) {
  SharedRegions regions;
  SharedRegionCache cache;
  ASSERT_TRUE(cache.probe(regions.probe()));
  ChannelClient client(regions, "server-0");
  v1::LookupResponse response;
  grpc::Status status;
  EXPECT_EQ(client.start(ChannelMethod::kBatch, lookup_of("t", 1), in(milliseconds(1000)), 0,
                         &response, &status),
            0u)
      << "not attached";
  ChannelHub hub;
  const auto server = hub.attach(cache, client.reference(), echo);
  client.attached();
  v1::LookupRequest large = lookup_of(std::string(kChannelSlotBytes, 'x'), 1);
  EXPECT_EQ(
      client.start(ChannelMethod::kBatch, large, in(milliseconds(1000)), 0, &response, &status),
      0u);
  EXPECT_EQ(client.start(ChannelMethod::kBatch, lookup_of("t", 1), in(milliseconds(1000)),
                         kChannelSlotBytes + 1, &response, &status),
            0u)
      << "an answer that would not fit";
  EXPECT_TRUE(client.usable());
}

TEST(CallChannel, ACallTheServerNeverAnswersIsADeadlineErrorAndBreaksTheChannel) {
  SharedRegions regions;
  SharedRegionCache cache;
  ASSERT_TRUE(cache.probe(regions.probe()));
  auto client = std::make_shared<ChannelClient>(regions, "server-7");
  std::atomic<bool> saw_cancel{false};
  ChannelHub hub;
  {
    const auto server =
        hub.attach(cache, client->reference(),
                   [&](const ChannelCall& call, std::unique_ptr<google::protobuf::Message>*) {
                     while (!call.cancelled()) std::this_thread::sleep_for(milliseconds(5));
                     saw_cancel = true;
                     return grpc::Status(grpc::StatusCode::CANCELLED, "stopped");
                   });
    client->attached();
    v1::LookupResponse response;
    grpc::Status status;
    const auto started = Clock::now();
    const uint64_t ticket = client->start(ChannelMethod::kBatch, lookup_of("t", 1),
                                          in(milliseconds(300)), 0, &response, &status);
    ASSERT_NE(ticket, 0u);
    EXPECT_FALSE(client->finish(ticket, Clock::now() + milliseconds(20))) << "before its deadline";
    EXPECT_TRUE(client->finish(ticket, Clock::time_point::max()));
    EXPECT_GE(Clock::now() - started, milliseconds(290));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    EXPECT_TRUE(testing::contains(status.error_message(), "server-7")) << status.error_message();
    EXPECT_FALSE(client->usable()) << "the slot may still be written";
    EXPECT_EQ(client->start(ChannelMethod::kBatch, lookup_of("t", 1), in(milliseconds(300)), 0,
                            &response, &status),
              0u);
  }  // the server stops: the call running in its handler sees cancelled()
  EXPECT_TRUE(saw_cancel.load());
}

TEST(CallChannel, AServerProcessThatExitsIsNamed) {
  SharedRegions regions;
  auto client = std::make_shared<ChannelClient>(regions, "server-3");
  const v1::SharedBytes probe = regions.probe();  // this process's, made before the fork
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The server: attaches, says so, and exits in the middle of the first call.
    SharedRegionCache cache;
    if (!cache.probe(probe)) ::_exit(3);
    ChannelHub hub;
    const auto server =
        hub.attach(cache, client->reference(),
                   [](const ChannelCall&, std::unique_ptr<google::protobuf::Message>*) {
                     ::_exit(0);
                     return grpc::Status::OK;
                   });
    const char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) ::_exit(2);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);  // a child that dies before it is ready ends the read instead of hanging it
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  client->attached();
  v1::LookupResponse response;
  grpc::Status status;
  const uint64_t ticket = client->start(ChannelMethod::kBatch, lookup_of("t", 1),
                                        in(milliseconds(20000)), 0, &response, &status);
  ASSERT_NE(ticket, 0u);
  const auto started = Clock::now();
  EXPECT_TRUE(client->finish(ticket, Clock::time_point::max()));
  EXPECT_LT(Clock::now() - started, milliseconds(5000)) << "found within a few liveness slices";
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(testing::contains(status.error_message(), "server-3")) << status.error_message();
  EXPECT_TRUE(testing::contains(status.error_message(), std::to_string(child)));
  int child_status = 0;
  EXPECT_EQ(::waitpid(child, &child_status, 0), child);
  EXPECT_FALSE(client->usable());
}

// Waits up to 5 s for `done`.
template <typename Done>
bool eventually(Done done) {
  const auto limit = Clock::now() + milliseconds(5000);
  while (!done() && Clock::now() < limit) std::this_thread::sleep_for(milliseconds(5));
  return done();
}

TEST(CallChannel, TheServerStopsServingAChannelTheTrainerClosedAndItsThreadEnds) {
  SharedRegions regions;
  SharedRegionCache cache;
  ASSERT_TRUE(cache.probe(regions.probe()));
  auto client = std::make_unique<ChannelClient>(regions, "server-0");
  ChannelHub hub;
  const auto server = hub.attach(cache, client->reference(), echo);
  client->attached();
  EXPECT_FALSE(server->ended());
  EXPECT_EQ(hub.threads(), 1);
  client.reset();
  EXPECT_TRUE(eventually([&] { return server->ended(); }));
  EXPECT_TRUE(eventually([&] { return hub.threads() == 0; })) << hub.threads();
}

// Starts a lookup of `table` on `client`, expecting it to go over the channel.
uint64_t start_lookup(ChannelClient& client, const std::string& table,
                      v1::LookupResponse* response, grpc::Status* status) {
  return client.start(ChannelMethod::kBatch, lookup_of(table, 1), in(milliseconds(10000)), 0,
                      response, status);
}

TEST(CallChannel, OneThreadServesATrainersChannelsToTheServersOfAHub) {
  SharedRegions regions;
  SharedRegionCache cache;
  ASSERT_TRUE(cache.probe(regions.probe()));
  ChannelHub hub;
  constexpr int kServers = 4;
  std::vector<std::unique_ptr<ChannelClient>> clients;
  std::vector<std::unique_ptr<ChannelServer>> servers;
  for (int i = 0; i < kServers; ++i) {
    clients.push_back(std::make_unique<ChannelClient>(regions, "server-" + std::to_string(i)));
    servers.push_back(hub.attach(cache, clients.back()->reference(), echo));
    clients.back()->attached();
  }
  for (int round = 0; round < 3; ++round) {
    std::vector<v1::LookupResponse> responses(kServers);
    std::vector<grpc::Status> statuses(kServers);
    std::vector<uint64_t> tickets;
    for (int i = 0; i < kServers; ++i) {
      const std::string table = "t" + std::to_string(round) + "-" + std::to_string(i);
      tickets.push_back(start_lookup(*clients[i], table, &responses[i], &statuses[i]));
      ASSERT_NE(tickets.back(), 0u);
    }
    for (int i = 0; i < kServers; ++i) {
      ASSERT_TRUE(clients[i]->finish(tickets[i], Clock::time_point::max()));
      ASSERT_TRUE(statuses[i].ok()) << statuses[i].error_message();
      EXPECT_EQ(responses[i].rows().data(), "t" + std::to_string(round) + "-" + std::to_string(i));
    }
  }
  EXPECT_EQ(hub.threads(), 1) << "one trainer process: one thread for its channels to all servers";
  servers[1].reset();  // a server stops: the others go on
  clients.erase(clients.begin() + 1);
  v1::LookupResponse response;
  grpc::Status status;
  const uint64_t ticket = start_lookup(*clients[2], "after", &response, &status);
  ASSERT_TRUE(clients[2]->finish(ticket, Clock::time_point::max()));
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.rows().data(), "after");
}

// Note [hub threads]: server A's handler blocks until server B's handler ran, as a sync Step on A
// may wait for another trainer whose Step waits on B. With one thread for both channels that would
// wait until the deadline; will_wait() hands B's calls to another thread.
TEST(CallChannel, ABlockedCallHandsTheTrainersOtherChannelsToAnotherThread) {
  SharedRegions regions;
  SharedRegionCache cache;
  ASSERT_TRUE(cache.probe(regions.probe()));
  ChannelHub hub;
  std::atomic<bool> b_ran{false};
  ChannelClient a(regions, "server-a");
  ChannelClient b(regions, "server-b");
  const auto server_a =
      hub.attach(cache, a.reference(), [&](const ChannelCall& call, auto* answer) {
        call.will_wait();
        while (!b_ran.load() && !call.cancelled()) std::this_thread::sleep_for(milliseconds(1));
        return echo(call, answer);
      });
  const auto server_b = hub.attach(cache, b.reference(), [&](const ChannelCall& call, auto* answer) {
    b_ran = true;
    return echo(call, answer);
  });
  a.attached();
  b.attached();
  for (int round = 0; round < 3; ++round) {
    b_ran = false;
    v1::LookupResponse response_a;
    v1::LookupResponse response_b;
    grpc::Status status_a;
    grpc::Status status_b;
    const auto started = Clock::now();
    const uint64_t ticket_a = start_lookup(a, "a", &response_a, &status_a);
    // B's call is posted while A's handler blocks on the one thread that took it.
    std::this_thread::sleep_for(milliseconds(20));
    const uint64_t ticket_b = start_lookup(b, "b", &response_b, &status_b);
    ASSERT_TRUE(b.finish(ticket_b, Clock::time_point::max()));
    ASSERT_TRUE(a.finish(ticket_a, Clock::time_point::max()));
    EXPECT_LT(Clock::now() - started, milliseconds(5000)) << "not answered only at the deadline";
    ASSERT_TRUE(status_a.ok()) << status_a.error_message();
    ASSERT_TRUE(status_b.ok()) << status_b.error_message();
    EXPECT_EQ(response_a.rows().data(), "a");
    EXPECT_EQ(response_b.rows().data(), "b");
  }
  // The thread that blocked waits idle for the next hand-off; one more may have been started when
  // a hand-off came before it was back.
  EXPECT_GE(hub.threads(), 2);
  EXPECT_LE(hub.threads(), 3);
}

// Note [busy slots] (issue 37, finding 3): a trainer that rewrites its slots to "posted" while
// their calls are blocked in the server's handler gets each slot taken once, not once per
// rewrite: the hub's threads stay bounded by the channel's slots (before: a new thread per
// re-post, 310 threads from 300 re-posts).
TEST(CallChannel, SlotsRepostedWhileTheirCallsBlockAreNotTakenAgain) {
  SharedRegions regions;
  SharedRegionCache cache;
  ASSERT_TRUE(cache.probe(regions.probe()));
  ChannelHub hub;
  std::atomic<bool> release{false};
  std::atomic<int> calls{0};
  ChannelClient client(regions, "server");
  const auto server = hub.attach(cache, client.reference(), [&](const ChannelCall& call, auto* answer) {
    ++calls;
    call.will_wait();
    while (!release.load() && !call.cancelled()) std::this_thread::sleep_for(milliseconds(1));
    return echo(call, answer);
  });
  client.attached();
  // The trainer's own view of its channel, to write the slots as a hostile trainer would.
  SharedRegionCache mine;
  ASSERT_TRUE(mine.probe(regions.probe()));
  const at::Tensor region =
      mine.view(client.reference(), {channel_layout::kRegionBytes}, at::kByte, "channel");
  void* base = region.data_ptr();
  const std::string request = lookup_of("a", 1).SerializeAsString();
  const int64_t deadline_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  in(milliseconds(10000)).time_since_epoch())
                                  .count();
  for (int round = 0; round < 100; ++round) {
    for (uint64_t index = 0; index < kChannelSlots; ++index) {
      channel_layout::Slot& slot = channel_layout::slot_of(base, index);
      std::memcpy(channel_layout::data_of(base, index), request.data(), request.size());
      slot.method = static_cast<uint32_t>(ChannelMethod::kBatch);
      slot.bytes = static_cast<uint32_t>(request.size());
      slot.deadline_ns = deadline_ns;
      slot.state.store(channel_layout::kPosted, std::memory_order_release);
      futex_wake_all(slot.state);
    }
    std::this_thread::sleep_for(milliseconds(2));
  }
  EXPECT_LE(calls.load(), kChannelSlots) << "a blocked slot was taken again";
  EXPECT_LE(hub.threads(), kChannelSlots + 2);
  release = true;
}

TEST(CallChannel, ARegionThatIsNotAChannelIsRefused) {
  SharedRegions regions;
  SharedRegionCache cache;
  ASSERT_TRUE(cache.probe(regions.probe()));
  const at::Tensor small = regions.allocate({64}, at::kByte);
  EXPECT_FALSE(testing::invalid_argument_message([&] {
                 ChannelHub hub;
                 hub.attach(cache, *regions.find(small), echo);
               }).empty());
  const at::Tensor large = regions.allocate({8 << 20}, at::kByte);  // big enough, no magic
  EXPECT_TRUE(testing::contains(testing::invalid_argument_message([&] {
                                  ChannelHub hub;
                                  hub.attach(cache, *regions.find(large), echo);
                                }),
                                "not a gradwire call channel"));
}

}  // namespace call_channel_test
}  // namespace gradwire::rpc
