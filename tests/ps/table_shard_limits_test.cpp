// A table shard's limits: the bytes of sync pushes held for the step in progress
// (max_pending_bytes and a server's shared PendingBudget: a push above either is refused with the
// shard unchanged; applied and discarded pushes release their bytes; a push is charged what it
// holds) and finish_step's may_wait, asked only by a call that would wait;
// values a trainer keeps rewriting in shared memory while the shard reads them (what is checked
// finite is what is applied).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "error_message.h"
#include "gradwire/common/error.h"
#include "id_tensors.h"
#include "ps/core/table_shard.h"

namespace gradwire::ps {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using testing::ids_tensor;
using testing::message_of;

// A pushed row of dim 4 holds 8 bytes of id and 16 of gradient.
constexpr int64_t kRowBytes = 24;

// What a push of `rows` such rows is charged (Note [pending push bytes]).
constexpr int64_t pushed(int64_t rows) { return kPendingPushOverheadBytes + rows * kRowBytes; }

TableConfig sync_table(int trainers) {
  TableConfig config;
  config.name = "emb";
  config.num_rows = 10;
  config.dim = 4;
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.lr = 0.5;
  config.initializer.seed = 3;
  config.mode = UpdateMode::kSync;
  config.num_trainers = trainers;
  return config;
}

// `rows` distinct ids from `first`, gradients of ones.
void push_rows(TableShard& shard, int trainer, int64_t step, int64_t first, int64_t rows,
               Attempt attempt = {}) {
  shard.push(trainer, step, at::arange(first, first + rows, at::kLong), at::ones({rows, 4}),
             attempt);
}

TEST(TableShardLimits, APushAboveMaxPendingBytesIsRefusedAndAppliedStepsReleaseTheirBytes) {
  const TableConfig config = sync_table(2);
  TableShard shard(config, 0, 1, pushed(2) + pushed(1));
  TableShard unlimited(config, 0, 1);
  const at::Tensor all = at::arange(0, config.num_rows, at::kLong);

  push_rows(shard, 0, 0, 0, 2);
  push_rows(unlimited, 0, 0, 0, 2);
  EXPECT_EQ(shard.pending_bytes(), pushed(2));
  const std::string message = message_of<ResourceLimitError>([&] { push_rows(shard, 1, 0, 4, 2); });
  EXPECT_THAT(message, HasSubstr("max_pending_bytes " + std::to_string(pushed(2) + pushed(1))));
  EXPECT_THAT(message,
              HasSubstr(std::to_string(pushed(2)) + " + " + std::to_string(pushed(2)) + " bytes"));
  EXPECT_THAT(message, HasSubstr("--max-pending-bytes"));
  EXPECT_EQ(shard.pending_bytes(), pushed(2));  // nothing of the refused push kept
  push_rows(shard, 1, 0, 4, 1);                 // what fits is still taken
  push_rows(unlimited, 1, 0, 4, 1);

  EXPECT_FALSE(shard.finish_step(0, 0, Clock::now()).applied);
  EXPECT_TRUE(shard.finish_step(1, 0, Clock::now()).applied);
  unlimited.finish_step(0, 0, Clock::now());
  unlimited.finish_step(1, 0, Clock::now());
  // The refused push was never applied: the table is the one without it.
  EXPECT_TRUE(at::equal(shard.lookup(all), unlimited.lookup(all)));
  EXPECT_EQ(shard.pending_bytes(), 0);

  // The applied step released its bytes: the next one may hold as much again.
  push_rows(shard, 0, 1, 0, 3);
  EXPECT_EQ(shard.pending_bytes(), pushed(3));
}

TEST(TableShardLimits, DiscardedPushesReleaseTheirBytes) {
  TableShard shard(sync_table(2), 0, 1, pushed(3));
  push_rows(shard, 0, 0, 0, 3);
  EXPECT_FALSE(message_of<ResourceLimitError>([&] { push_rows(shard, 1, 0, 4, 1); }).empty());
  // A new process of trainer 0 discards what its earlier one pushed.
  push_rows(shard, 0, 0, 0, 3, Attempt{0, 1});
  EXPECT_EQ(shard.pending_bytes(), pushed(3));
  // A new attempt of the job discards every trainer's pushes.
  push_rows(shard, 1, 0, 4, 3, Attempt{1, 0});
  EXPECT_EQ(shard.pending_bytes(), pushed(3));
  // Rewinding discards the step in progress too.
  ShardSnapshot snapshot = shard.snapshot();
  snapshot.step = 5;
  EXPECT_EQ(shard.rewind(std::move(snapshot), 1, Attempt{1, 0}), 5);
  EXPECT_EQ(shard.pending_bytes(), 0);
  push_rows(shard, 0, 5, 0, 3, Attempt{1, 0});
}

// Note [pending push bytes] (issue 37, finding 5): max_pending_bytes counted ids and gradients
// only, so one-id pushes of dim 1 were 12 bytes each while each held about 900 bytes of tensors,
// storages and list entries (8 M of them: 9.6 MB counted, 697 MiB of RSS). Now each is charged its
// storage and kPendingPushOverheadBytes: with a 1 MiB cap at most 1 MiB / 1 KiB of them are kept
// (before, 87,381), and the refusal names the limit.
TEST(TableShardLimits, ManyTinyPushesAreRefusedBeforeWhatTheyHoldPassesTheCap) {
  TableConfig config = sync_table(1);
  config.num_rows = 1 << 20;
  config.dim = 1;
  constexpr int64_t kCap = int64_t{1} << 20;
  TableShard shard(config, 0, 1, kCap);
  int64_t kept = 0;
  std::string refusal;
  for (int64_t id = 0; id < config.num_rows && refusal.empty(); ++id) {
    try {
      shard.push(0, 0, ids_tensor({id}), at::ones({1, 1}));
      ++kept;
    } catch (const ResourceLimitError& error) {
      refusal = error.what();
    }
  }
  ASSERT_FALSE(refusal.empty()) << kept << " one-id pushes were all kept";
  EXPECT_LE(kept, kCap / kPendingPushOverheadBytes);
  EXPECT_GE(kept, kCap / (kPendingPushOverheadBytes + 2 * 64) - 1);
  EXPECT_LE(shard.pending_bytes(), kCap);
  EXPECT_GE(shard.pending_bytes(), kept * kPendingPushOverheadBytes);
  EXPECT_THAT(refusal, HasSubstr("max_pending_bytes " + std::to_string(kCap)));
  EXPECT_THAT(refusal, HasSubstr("--max-pending-bytes"));
}

// A push that keeps a view keeps its whole storage (a slice of a large buffer holds all of it),
// and that storage is what is charged; a view of a trainer's shared memory (from_blob of its part
// of the region) is charged its own bytes, not the region's.
TEST(TableShardLimits, AKeptViewIsChargedItsWholeStorageAndABlobItsOwnBytes) {
  TableConfig config = sync_table(1);
  TableShard shard(config, 0, 1);
  const at::Tensor big = at::ones({1000, 4});
  shard.push_owned(0, 0, ids_tensor({0, 1}), big.narrow(0, 0, 2));
  EXPECT_EQ(shard.pending_bytes(), kPendingPushOverheadBytes + 2 * 8 + 1000 * 4 * 4);

  TableShard blob_shard(config, 0, 1);
  std::vector<float> region(1000 * 4, 1.0f);
  const at::Tensor part = at::from_blob(region.data() + 8 * 4, {2, 4});  // rows 8 and 9
  blob_shard.push_owned(0, 0, ids_tensor({0, 1}), part);
  EXPECT_EQ(blob_shard.pending_bytes(), pushed(2));
  EXPECT_TRUE(blob_shard.finish_step(0, 0, Clock::now()).applied);
}

// ServerOptions::max_total_pending_bytes: the shards of one server share a PendingBudget; a push
// that fits its own shard's cap but not the budget is refused naming the server-wide limit, and
// applied, discarded or destroyed shards give their bytes back.
TEST(TableShardLimits, ShardsSharingABudgetAreRefusedTogetherAndReleaseIt) {
  const auto budget = std::make_shared<PendingBudget>(pushed(3) + pushed(1));
  TableConfig other_config = sync_table(1);
  other_config.name = "other";
  TableShard first(sync_table(1), 0, 1, kDefaultMaxPendingBytes, budget);
  auto second = std::make_unique<TableShard>(other_config, 0, 1, kDefaultMaxPendingBytes, budget);
  push_rows(first, 0, 0, 0, 3);
  EXPECT_EQ(budget->held(), pushed(3));
  const std::string message =
      message_of<ResourceLimitError>([&] { push_rows(*second, 0, 0, 0, 2); });
  EXPECT_THAT(message, HasSubstr("max_total_pending_bytes " + std::to_string(budget->limit())));
  EXPECT_THAT(message,
              HasSubstr(std::to_string(pushed(3)) + " + " + std::to_string(pushed(2)) + " bytes"));
  EXPECT_THAT(message, HasSubstr("--max-total-pending-bytes"));
  EXPECT_EQ(second->pending_bytes(), 0);
  EXPECT_EQ(budget->held(), pushed(3));
  push_rows(*second, 0, 0, 0, 1);  // what fits is taken
  EXPECT_EQ(budget->held(), pushed(3) + pushed(1));
  // The first shard's step is applied: its bytes go back to the budget.
  EXPECT_TRUE(first.finish_step(0, 0, Clock::now()).applied);
  EXPECT_EQ(budget->held(), pushed(1));
  push_rows(first, 0, 1, 0, 3);
  // A newer attempt discards the first shard's step, a destroyed shard gives back what it held.
  push_rows(first, 0, 1, 4, 1, Attempt{1, 0});
  EXPECT_EQ(budget->held(), pushed(1) + pushed(1));
  second.reset();
  EXPECT_EQ(budget->held(), pushed(1));
  ShardSnapshot snapshot = first.snapshot();
  snapshot.step = 7;
  first.rewind(std::move(snapshot), 0, Attempt{1, 0});
  EXPECT_EQ(budget->held(), 0);
}

TEST(TableShardLimits, MayWaitIsAskedOnlyByACallThatWouldWaitAndARefusalRecordsNothing) {
  TableShard shard(sync_table(2), 0, 1);
  int asked = 0;
  const auto refuse = [&] {
    ++asked;
    return false;
  };
  const StepOutcome refused =
      shard.finish_step(0, 0, Attempt{}, StepWait{Clock::now(), {}, refuse});
  EXPECT_TRUE(refused.refused);
  EXPECT_FALSE(refused.applied);
  EXPECT_EQ(asked, 1);
  // Trainer 0's finish was not recorded: trainer 1's call would wait too, and is refused.
  EXPECT_TRUE(shard.finish_step(1, 0, Attempt{}, StepWait{Clock::now(), {}, refuse}).refused);
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(shard.step(), 0);

  const auto allow = [&] {
    ++asked;
    return true;
  };
  EXPECT_FALSE(shard.finish_step(0, 0, Attempt{}, StepWait{Clock::now(), {}, allow}).applied);
  EXPECT_EQ(asked, 3);
  // The call that completes the step does not wait and is not asked.
  const StepOutcome done = shard.finish_step(1, 0, Attempt{}, StepWait{Clock::now(), {}, refuse});
  EXPECT_TRUE(done.applied);
  EXPECT_FALSE(done.refused);
  EXPECT_EQ(asked, 3);
  EXPECT_EQ(shard.step(), 1);
}

// Note [checked is applied] (issue 37, finding 7): an async push or an assign of values in a
// trainer's shared memory (push_owned takes such views) is checked finite and then applied; the
// trainer can rewrite the values in between. Before, the optimizer (or the row copy) read them
// again after the check, so a racing write of NaN reached the rows. A thread here flips the last
// value between 1 and NaN while the shard takes the same tensor again and again: each call is
// refused or applies finite values, and the rows stay finite.
class FlippingValue {
 public:
  explicit FlippingValue(const at::Tensor& values)
      : last_(static_cast<uint32_t*>(values.data_ptr()) + values.numel() - 1),
        writer_([this] {
          const uint32_t one = bits(1.0f);
          const uint32_t nan = bits(std::numeric_limits<float>::quiet_NaN());
          while (!stop_.load(std::memory_order_relaxed)) {
            __atomic_store_n(last_, nan, __ATOMIC_RELAXED);
            __atomic_store_n(last_, one, __ATOMIC_RELAXED);
          }
        }) {}
  ~FlippingValue() {
    stop_ = true;
    writer_.join();
  }

 private:
  static uint32_t bits(float value) {
    uint32_t out;
    std::memcpy(&out, &value, sizeof(out));
    return out;
  }
  uint32_t* const last_;
  std::atomic<bool> stop_{false};
  std::thread writer_;
};

constexpr int64_t kRacedRows = 2048;
constexpr int64_t kRacedDim = 256;
constexpr auto kRaceFor = std::chrono::seconds(2);

TableConfig raced_table(UpdateMode mode, TableKind kind) {
  TableConfig config = sync_table(1);
  config.num_rows = kRacedRows;
  config.dim = kRacedDim;
  config.optimizer.lr = 1e-3;
  config.mode = mode;
  config.kind = kind;
  return config;
}

// Calls `call` (which reads `shared`) for kRaceFor while a thread flips one of its values between
// 1 and NaN; after each call `finite` must hold (a NaN never got past the check into the table).
void race(const at::Tensor& shared, const std::function<void()>& call,
          const std::function<bool()>& finite, const char* applied) {
  int calls = 0;
  int refused = 0;
  {
    const FlippingValue flipping(shared);
    const auto end = Clock::now() + kRaceFor;
    while (Clock::now() < end) {
      ++calls;
      try {
        call();
      } catch (const InvalidArgument&) {
        ++refused;
      }
      ASSERT_TRUE(finite()) << "a NaN was " << applied << " after " << calls << " calls ("
                            << refused << " refused)";
    }
  }
  EXPECT_GT(calls, 0);
}

TEST(TableShardLimits, AnAsyncPushOfValuesRewrittenMeanwhileNeverAppliesANonFiniteOne) {
  TableShard shard(raced_table(UpdateMode::kAsync, TableKind::kEmbedding), 0, 1);
  const at::Tensor ids = at::arange(kRacedRows, at::kLong);
  const at::Tensor shared = at::ones({kRacedRows, kRacedDim});
  race(
      shared, [&] { shard.push_owned(0, 0, ids, shared); },
      [&] {
        return shard.lookup(ids.slice(0, kRacedRows - 1)).isfinite().all().item<bool>();
      },
      "applied");
}

TEST(TableShardLimits, AnAssignOfValuesRewrittenMeanwhileNeverWritesANonFiniteOne) {
  TableShard shard(raced_table(UpdateMode::kSync, TableKind::kDense), 0, 1);
  const at::Tensor ids = at::arange(kRacedRows, at::kLong);
  const at::Tensor shared = at::ones({kRacedRows, kRacedDim});
  race(
      shared, [&] { shard.assign(0, ids, shared, /*complete=*/false); },
      [&] { return shard.snapshot().weights[kRacedRows - 1].isfinite().all().item<bool>(); },
      "written");
}

}  // namespace
}  // namespace gradwire::ps
