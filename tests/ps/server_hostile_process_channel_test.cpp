// Issue 37's finding 3 over a call channel, replayed against a real gradwire-ps-server process
// (server_hostile_process.h): a probed trainer's channel whose four slots hold lookups of a dense
// table never assigned (each waits for its values), posted again ~300 times while they wait by
// rewriting the slots' state words in the trainer's memory. Before the fix each re-post was taken
// again by a new thread (300 re-posts: 310 threads in 3.9 s) and the server outlived SIGTERM by
// more than 15 s. Now a busy slot is never taken again (Note [busy slots] in channel_hub.cpp), the
// waiting lookups count in --max-waiting-steps and end at SIGTERM: the threads stay bounded, the
// victim table stays bit-for-bit as it was, and the server exits within 2 s with them in flight.
#include <algorithm>
#include <cstring>
#include <thread>

#include "common/futex.h"
#include "rpc/call_channel.h"
#include "rpc/channel_layout.h"
#include "rpc/shared_memory.h"
#include "server_hostile_process.h"

namespace gradwire::ps::server_hostile_process_test {

TEST_F(HostileProcess, RepostedChannelSlotsAreBoundedAndStopOnTime) {
  namespace layout = rpc::channel_layout;
  constexpr uint64_t kSlots = rpc::kChannelSlots;
  static_assert(layout::kRegionBytes <= kRegionCap, "the fixture's server must map a channel");

  rpc::SharedRegions trainer;
  rpc::ChannelClient channel(trainer, address_);  // closed only after the server stopped
  TableConfig dense = table_config("never", 4, 4, UpdateMode::kSync);
  dense.kind = TableKind::kDense;
  // CreateTable as a trainer on the server's host: its probe, its host identity, its channel.
  v1::CreateTableResponse created;
  const grpc::Status status =
      client_->create_probed(dense, kHost, trainer.probe(), &created, &channel.reference());
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_TRUE(created.shared_memory()) << "the server refused this trainer's probe";
  ASSERT_TRUE(created.channel()) << "the server does not serve this trainer's channel";
  ASSERT_TRUE(created.awaiting_values()) << "lookups of 'never' would not wait";
  channel.attached();

  // The trainer's own view of its channel, to write the slots as a hostile trainer would.
  rpc::SharedRegionCache mine;
  ASSERT_TRUE(mine.probe(trainer.probe()));
  const at::Tensor region =
      mine.view(channel.reference(), {layout::kRegionBytes}, at::kByte, "channel");
  void* const base = region.data_ptr();
  // A lookup of the waiting table, as the one part of a Batch (the channel's only method).
  v1::BatchRequest batch;
  *batch.add_lookups() = lookup_request("never", at::arange(4, at::kLong));
  const std::string lookup = batch.SerializeAsString();
  const int64_t deadline_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  (std::chrono::system_clock::now() + 60s).time_since_epoch())
                                  .count();
  // Slot `index` set to `from` (free, or taken as the server marked it), then posted again.
  const auto post = [&](uint64_t index, uint32_t from) {
    layout::Slot& slot = layout::slot_of(base, index);
    slot.state.store(from, std::memory_order_release);
    std::memcpy(layout::data_of(base, index), lookup.data(), lookup.size());
    slot.method = static_cast<uint32_t>(rpc::ChannelMethod::kBatch);
    slot.bytes = static_cast<uint32_t>(lookup.size());
    slot.deadline_ns = deadline_ns;
    slot.state.store(layout::kPosted, std::memory_order_release);
    futex_wake_all(slot.state);
  };
  const auto in_state = [&](uint32_t state) {
    uint64_t count = 0;
    for (uint64_t i = 0; i < kSlots; ++i) {
      count += layout::slot_of(base, i).state.load(std::memory_order_acquire) == state;
    }
    return count;
  };

  const Usage before = usage();
  for (uint64_t i = 0; i < kSlots; ++i) post(i, layout::kFree);
  launch::testing::wait_until([&] { return in_state(layout::kTaken) == kSlots; }, 5s);
  ASSERT_EQ(in_state(layout::kTaken), kSlots) << "the server did not take the four lookups";
  std::this_thread::sleep_for(300ms);
  ASSERT_EQ(in_state(layout::kTaken), kSlots) << "the lookups were answered instead of waiting";
  const Usage waiting = usage();

  // ~300 re-posts of the four busy slots over ~2 s, as taken or free.
  int64_t peak_threads = waiting.threads;
  int reposts = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < 75; ++round) {
    for (uint64_t i = 0; i < kSlots; ++i, ++reposts) {
      post(i, round % 2 ? layout::kTaken : layout::kFree);
    }
    std::this_thread::sleep_for(25ms);
    peak_threads = std::max(peak_threads, usage().threads);
  }
  const auto storm_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - start)
                            .count();
  std::this_thread::sleep_for(300ms);
  peak_threads = std::max(peak_threads, usage().threads);
  // The slots were left posted: none of them is taken again while its lookup waits.
  EXPECT_EQ(in_state(layout::kPosted), kSlots) << "a slot re-posted while busy was taken again";
  const Usage after = usage();
  print(std::to_string(reposts) + " re-posted lookups through one " + std::to_string(kSlots) +
            "-slot channel in " + std::to_string(storm_ms) + " ms (threads before " +
            std::to_string(before.threads) + ", with 4 waiting " +
            std::to_string(waiting.threads) + ", peak " + std::to_string(peak_threads) +
            ", after " + std::to_string(after.threads) + ")",
        before, after);
  EXPECT_LE(peak_threads, before.threads + kMaxWaiting + 8)
      << reposts << " re-posts: 310 threads before Note [busy slots]";
  expect_victim_unchanged();
  // SIGTERM with the four lookups still waiting and the trainer's channel still open.
  stop(2s);
  // The waiting lookups were answered (ended by the stop), not abandoned in their slots.
  std::string codes;
  for (uint64_t i = 0; i < kSlots; ++i) {
    codes += " " + std::to_string(layout::slot_of(base, i).code);
  }
  std::cout << "[hostile] channel slots after the stop: " << in_state(layout::kAnswered)
            << " answered, codes" << codes << std::endl;
  EXPECT_EQ(in_state(layout::kAnswered), kSlots) << "a waiting lookup was never answered";
}

}  // namespace gradwire::ps::server_hostile_process_test
