// Sync steps that can be redone (docs/ps.md "Restarts"): a newer attempt of the job or a newer
// process of one trainer discards what the replaced one left of the step in progress, so the step
// is applied exactly once; replaced callers are refused and waiting ones stop; rewinding to a
// snapshot; sums that overflow; a reduction whose bits do not depend on arrival order. An elastic
// job's new membership (TableShard::set_trainers, docs/elastic.md "Parameter servers"): the count
// changes only with the newest attempt, the step in progress is discarded, waiters stop, the next
// step needs the new count and divides by it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <limits>
#include <string>
#include <thread>

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

// rows x 2, zeros, SGD lr 1, sync, mean over `trainers`: one applied step with gradient g on
// every trainer moves a row to exactly -g.
TableConfig sgd_table(int trainers, int64_t rows = 4, UpdateMode mode = UpdateMode::kSync) {
  TableConfig config;
  config.name = "emb";
  config.num_rows = rows;
  config.dim = 2;
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.lr = 1.0;
  config.initializer.kind = InitializerKind::kZeros;
  config.mode = mode;
  config.num_trainers = trainers;
  return config;
}

at::Tensor row(const TableShard& shard, int64_t id) { return shard.lookup(ids_tensor({id}))[0]; }

const Clock::time_point kNow{};  // a deadline already passed: finish_step does not wait

TEST(StepAttempts, ARestartedGroupRedoesTheStepExactlyOnce) {
  TableShard shard(sgd_table(2), 0, 1);
  // Attempt 0: both trainers push for step 0, trainer 0 finishes, trainer 1 dies before its step.
  shard.push(0, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{0, 10});
  shard.push(1, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{0, 20});
  EXPECT_FALSE(shard.finish_step(0, 0, kNow, Attempt{0, 10}).applied);
  // Attempt 1 (the whole group restarted) redoes step 0: each trainer pushes once more.
  shard.push(0, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{1, 11});
  shard.push(1, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{1, 21});
  EXPECT_FALSE(shard.finish_step(0, 0, kNow, Attempt{1, 11}).applied);
  EXPECT_TRUE(shard.finish_step(1, 0, kNow, Attempt{1, 21}).applied);
  // Applied once: -1, not -2 (both attempts' gradients) and not refused as "after finishing it".
  EXPECT_TRUE(at::equal(row(shard, 0), at::full({2}, -1.0f)));
  EXPECT_EQ(shard.step(), 1);
  // The old attempt's calls are refused, naming both attempts.
  EXPECT_THAT(message_of<StaleAttemptError>([&] {
                shard.push(1, 1, ids_tensor({0}), at::ones({1, 2}), Attempt{0, 20});
              }),
              HasSubstr("from attempt 0 of the job was refused: attempt 1 has started"));
  EXPECT_THAT(message_of<StaleAttemptError>([&] {
                shard.finish_step(0, 1, kNow, Attempt{0, 10});
              }),
              HasSubstr("attempt 1 has started"));
}

TEST(StepAttempts, ARestartedTrainerReplacesOnlyItsOwnPushes) {
  TableShard shard(sgd_table(2), 0, 1);
  shard.push(0, 0, ids_tensor({1}), at::ones({1, 2}), Attempt{0, 10});
  EXPECT_FALSE(shard.finish_step(0, 0, kNow, Attempt{0, 10}).applied);
  // Trainer 1's first process pushed and died before finishing; its new process pushes again.
  shard.push(1, 0, ids_tensor({1}), at::full({1, 2}, 5.0f), Attempt{0, 20});
  shard.push(1, 0, ids_tensor({1}), at::ones({1, 2}), Attempt{0, 21});
  EXPECT_THAT(message_of<StaleAttemptError>([&] {
                shard.finish_step(1, 0, kNow, Attempt{0, 20});
              }),
              HasSubstr("earlier process of trainer 1"));
  EXPECT_TRUE(shard.finish_step(1, 0, kNow, Attempt{0, 21}).applied);
  // Trainer 0's push and finish stayed; trainer 1's first push went: mean of 1 and 1.
  EXPECT_TRUE(at::equal(row(shard, 1), at::full({2}, -1.0f)));
}

TEST(StepAttempts, AWaiterOfAReplacedAttemptStops) {
  TableShard shard(sgd_table(2), 0, 1);
  shard.push(0, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{0, 10});
  auto waiter = std::async(std::launch::async, [&] {
    return message_of<StaleAttemptError>([&] {
      shard.finish_step(0, 0, Clock::now() + std::chrono::seconds(60), Attempt{0, 10});
    });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // most likely waiting by now
  // The group restarts; the new trainer 1 calls first. The old waiter stops well before 60 s.
  shard.push(1, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{1, 21});
  ASSERT_EQ(waiter.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  // Whether the waiter was still arriving or already waiting, it stops naming the new attempt.
  EXPECT_THAT(waiter.get(),
              ::testing::AnyOf(HasSubstr("was discarded while trainer 0 waited for it: attempt 1"),
                               HasSubstr("attempt 1 has started")));
  EXPECT_EQ(shard.step(), 0);
}

TEST(StepAttempts, ACancelledWaiterReturns) {
  TableShard shard(sgd_table(2), 0, 1);
  const StepOutcome outcome = shard.finish_step(
      0, 0, Attempt{}, StepWait{Clock::now() + std::chrono::seconds(60), [] { return true; }, {}});
  EXPECT_FALSE(outcome.applied);
  EXPECT_TRUE(outcome.cancelled);
}

TEST(StepAttempts, GradientsThatOverflowWhenSummedAreRefused) {
  TableShard shard(sgd_table(1), 0, 1);
  const float big = 3e38f;
  const std::string message = message_of<InvalidArgument>([&] {
    shard.push(0, 0, ids_tensor({0, 0}), at::full({2, 2}, big));
  });
  EXPECT_THAT(message, HasSubstr("once duplicate ids are summed"));
  // Across trainers: each push is finite, their sum is not; nothing is applied.
  TableShard two(sgd_table(2), 0, 1);
  two.push(0, 0, ids_tensor({0}), at::full({1, 2}, big));
  two.push(1, 0, ids_tensor({0}), at::full({1, 2}, big));
  EXPECT_FALSE(two.finish_step(0, 0, kNow).applied);
  EXPECT_THROW(two.finish_step(1, 0, kNow), InvalidArgument);
  EXPECT_EQ(two.step(), 0);
  EXPECT_TRUE(at::equal(row(two, 0), at::zeros({2})));
  EXPECT_TRUE(std::isfinite(row(shard, 0)[0].item<float>()));
}

TEST(StepAttempts, ReductionDoesNotDependOnArrivalOrder) {
  // Float sums depend on their order: (1e8 + 1) - 1e8 = 0 but (1e8 - 1e8) + 1 = 1.
  const std::vector<float> values{1e8f, 1.0f, -1e8f};
  const auto run = [&](const std::vector<int>& arrival) {
    TableShard shard(sgd_table(3), 0, 1);
    for (const int trainer : arrival) {
      shard.push(trainer, 0, ids_tensor({2}), at::full({1, 2}, values[trainer]));
    }
    for (const int trainer : arrival) shard.finish_step(trainer, 0, kNow);
    return row(shard, 2);
  };
  const at::Tensor first = run({0, 1, 2});
  EXPECT_TRUE(at::equal(run({2, 1, 0}), first));
  EXPECT_TRUE(at::equal(run({1, 2, 0}), first));
}

// Note [attempt limits] (issue 37, finding 6): before, one call with attempt 2^63 - 1 was taken,
// and every later call of attempt 0, 1 or 10^18 was refused as stale until the server restarted.
// Now an attempt more than kMaxAttemptJump above the newest one is refused with InvalidArgument
// naming the limit, by every call that admits attempts, and nothing changes.
TEST(StepAttempts, AnAttemptFarAboveTheNewestIsRefusedAndLocksNothing) {
  TableShard shard(sgd_table(2), 0, 1);
  shard.push(0, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{0, 10});
  EXPECT_FALSE(shard.finish_step(0, 0, kNow, Attempt{0, 10}).applied);
  const int64_t pending = shard.pending_bytes();
  for (const int64_t hostile : {std::numeric_limits<int64_t>::max(), int64_t{1000000000000000000},
                                kMaxAttemptJump + 1}) {
    SCOPED_TRACE(hostile);
    const std::string message = message_of<InvalidArgument>(
        [&] { shard.push(1, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{hostile, 20}); });
    EXPECT_THAT(message, HasSubstr("from attempt " + std::to_string(hostile)));
    EXPECT_THAT(message, HasSubstr("at most " + std::to_string(kMaxAttemptJump) +
                                   " above it (up to " + std::to_string(kMaxAttemptJump) + ")"));
    EXPECT_THAT(message, HasSubstr("nothing was changed"));
    EXPECT_THROW(shard.finish_step(1, 0, kNow, Attempt{hostile, 20}), InvalidArgument);
    EXPECT_THROW(shard.admit_at(1, 0, Attempt{hostile, 20}), InvalidArgument);
    EXPECT_THROW(shard.rewind(shard.snapshot(), 1, Attempt{hostile, 20}), InvalidArgument);
  }
  // Attempt 0's step is as it was: trainer 0's push and finish stay, trainer 1 completes it.
  EXPECT_EQ(shard.pending_bytes(), pending);
  shard.push(1, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{0, 20});
  EXPECT_TRUE(shard.finish_step(1, 0, kNow, Attempt{0, 20}).applied);
  EXPECT_TRUE(at::equal(row(shard, 0), at::full({2}, -1.0f)));
  // A restarted job moves up within the window, step by step as far as it needs.
  shard.push(0, 1, ids_tensor({1}), at::ones({1, 2}), Attempt{kMaxAttemptJump, 11});
  shard.push(1, 1, ids_tensor({1}), at::ones({1, 2}), Attempt{2 * kMaxAttemptJump, 21});
  // Trainer 1's push alone (one row: 8 + 2 x 4 bytes, and the push's bookkeeping): the newer
  // attempt discarded trainer 0's.
  EXPECT_EQ(shard.pending_bytes(), kPendingPushOverheadBytes + 16);
  EXPECT_THROW(shard.push(0, 1, ids_tensor({1}), at::ones({1, 2}),
                          Attempt{3 * kMaxAttemptJump + 1, 12}),
               InvalidArgument);
  shard.push(0, 1, ids_tensor({1}), at::ones({1, 2}), Attempt{2 * kMaxAttemptJump, 12});
  shard.finish_step(0, 1, kNow, Attempt{2 * kMaxAttemptJump, 12});
  EXPECT_TRUE(shard.finish_step(1, 1, kNow, Attempt{2 * kMaxAttemptJump, 21}).applied);
  EXPECT_EQ(shard.step(), 2);
}

// An incarnation is the trainer process's start time in ns since the epoch: one more than
// kMaxIncarnationSkew after this host's clock is refused with InvalidArgument, and nothing
// changes. Before, incarnation 2^64 - 1 was taken, and every later process of that trainer was
// refused as "an earlier process" until the server restarted.
TEST(StepAttempts, AnIncarnationFromTheFarFutureIsRefusedAndLocksNothing) {
  const auto now_ns = [] {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  };
  const auto skew = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(kMaxIncarnationSkew).count());
  TableShard shard(sgd_table(2), 0, 1);
  const uint64_t started = now_ns();
  shard.push(1, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{0, started});
  EXPECT_FALSE(shard.finish_step(1, 0, kNow, Attempt{0, started}).applied);
  const int64_t pending = shard.pending_bytes();
  for (const uint64_t hostile : {std::numeric_limits<uint64_t>::max(), now_ns() + 2 * skew}) {
    SCOPED_TRACE(hostile);
    const std::string message = message_of<InvalidArgument>(
        [&] { shard.push(1, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{0, hostile}); });
    EXPECT_THAT(message, HasSubstr("with incarnation " + std::to_string(hostile)));
    EXPECT_THAT(message, HasSubstr("more than the " + std::to_string(kMaxIncarnationSkew.count()) +
                                   " s allowed for clocks that disagree"));
    EXPECT_THROW(shard.finish_step(1, 0, kNow, Attempt{0, hostile}), InvalidArgument);
    EXPECT_THROW(shard.admit_at(1, 0, Attempt{0, hostile}), InvalidArgument);
    // With a newer attempt as well: neither is taken.
    EXPECT_THROW(shard.finish_step(0, 0, kNow, Attempt{1, hostile}), InvalidArgument);
  }
  // Trainer 1's process, its push and its finish are as they were; trainer 0 completes the step.
  EXPECT_EQ(shard.pending_bytes(), pending);
  shard.push(0, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{0, 5});
  EXPECT_TRUE(shard.finish_step(0, 0, kNow, Attempt{0, 5}).applied);
  EXPECT_TRUE(at::equal(row(shard, 0), at::full({2}, -1.0f)));
  // A restarted trainer whose host's clock is ahead, within the allowance, is taken; the one
  // before it is then refused as an earlier process.
  const uint64_t ahead = now_ns() + skew / 2;
  shard.push(1, 1, ids_tensor({0}), at::ones({1, 2}), Attempt{0, ahead});
  EXPECT_THROW(shard.push(1, 1, ids_tensor({0}), at::ones({1, 2}), Attempt{0, started}),
               StaleAttemptError);
}

TEST(StepAttempts, RewindReplacesTheStateOnce) {
  TableShard shard(sgd_table(2), 0, 1);
  const auto step = [&](float gradient) {
    const int64_t at = shard.step();
    shard.push(0, at, ids_tensor({3}), at::full({1, 2}, gradient));
    shard.push(1, at, ids_tensor({3}), at::full({1, 2}, gradient));
    shard.finish_step(0, at, kNow);
    EXPECT_TRUE(shard.finish_step(1, at, kNow).applied);
  };
  step(1.0f);
  const ShardSnapshot at_one = shard.snapshot();
  step(2.0f);
  EXPECT_TRUE(at::equal(row(shard, 3), at::full({2}, -3.0f)));
  EXPECT_FALSE(shard.admit_at(0, 1, Attempt{1, 1}));
  EXPECT_EQ(shard.rewind(at_one, 0, Attempt{1, 1}), 1);
  EXPECT_TRUE(at::equal(row(shard, 3), at::full({2}, -1.0f)));
  // Trainer 0 pushes for step 1; trainer 1 then resumes too: the table is at step 1 already, so
  // nothing is replaced and trainer 0's push stays.
  shard.push(0, 1, ids_tensor({3}), at::full({1, 2}, 2.0f), Attempt{1, 1});
  EXPECT_TRUE(shard.admit_at(1, 1, Attempt{1, 2}));
  EXPECT_EQ(shard.rewind(at_one, 1, Attempt{1, 2}), 1);
  shard.push(1, 1, ids_tensor({3}), at::full({1, 2}, 2.0f), Attempt{1, 2});
  shard.finish_step(0, 1, kNow, Attempt{1, 1});
  EXPECT_TRUE(shard.finish_step(1, 1, kNow, Attempt{1, 2}).applied);
  EXPECT_TRUE(at::equal(row(shard, 3), at::full({2}, -3.0f)));
  // A snapshot of another table is refused.
  ShardSnapshot other = at_one;
  other.config.name = "other";
  EXPECT_THROW(shard.rewind(other, 0, Attempt{1, 1}), InvalidArgument);
}

TEST(ElasticTrainers, ANewMembershipDiscardsTheStepInProgressAndStepsWithItsCount) {
  TableShard shard(sgd_table(3), 0, 1);
  // Generation 0 of 3 trainers: trainers 0 and 2 pushed step 0, trainer 1 died before it.
  shard.push(0, 0, ids_tensor({0}), at::full({1, 2}, 3.0f), Attempt{0, 10});
  shard.push(2, 0, ids_tensor({0}), at::full({1, 2}, 3.0f), Attempt{0, 30});
  EXPECT_FALSE(shard.finish_step(0, 0, kNow, Attempt{0, 10}).applied);
  // Generation 1: the two survivors, renumbered 0 and 1.
  shard.set_trainers(2, Attempt{1, 10});
  EXPECT_EQ(shard.num_trainers(), 2);
  EXPECT_EQ(shard.current_config().num_trainers, 2);
  EXPECT_EQ(shard.config().num_trainers, 3);  // where it began
  EXPECT_EQ(shard.pending_bytes(), 0);
  EXPECT_TRUE(at::equal(row(shard, 0), at::zeros({2})));
  // Trainer 2 of the old membership is no trainer now.
  EXPECT_THROW(shard.push(2, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{1, 30}),
               InvalidArgument);
  // The step redone by two: the mean divides by 2, and two finishes apply it.
  shard.push(0, 0, ids_tensor({0}), at::full({1, 2}, 1.0f), Attempt{1, 10});
  shard.push(1, 0, ids_tensor({0}), at::full({1, 2}, 3.0f), Attempt{1, 30});
  EXPECT_FALSE(shard.finish_step(0, 0, kNow, Attempt{1, 10}).applied);
  EXPECT_TRUE(shard.finish_step(1, 0, kNow, Attempt{1, 30}).applied);
  EXPECT_TRUE(at::equal(row(shard, 0), at::full({2}, -2.0f)));
  // A third trainer joins (generation 2): the next step needs three.
  shard.set_trainers(3, Attempt{2, 10});
  shard.push(0, 1, ids_tensor({1}), at::full({1, 2}, 3.0f), Attempt{2, 10});
  EXPECT_FALSE(shard.finish_step(0, 1, kNow, Attempt{2, 10}).applied);
  EXPECT_FALSE(shard.finish_step(1, 1, kNow, Attempt{2, 30}).applied);
  EXPECT_TRUE(shard.finish_step(2, 1, kNow, Attempt{2, 40}).applied);
  EXPECT_TRUE(at::equal(row(shard, 1), at::full({2}, -1.0f)));
  // A snapshot keeps the count now.
  EXPECT_EQ(shard.snapshot().config.num_trainers, 3);
}

TEST(ElasticTrainers, OnlyTheNewestAttemptChangesTheCount) {
  TableShard shard(sgd_table(2), 0, 1);
  shard.set_trainers(3, Attempt{5, 1});
  // An older generation's call changes nothing.
  const std::string stale = message_of<StaleAttemptError>([&] { shard.set_trainers(2, {4, 1}); });
  EXPECT_THAT(stale, HasSubstr("attempt 4"));
  EXPECT_EQ(shard.num_trainers(), 3);
  // Far above the newest: refused (Note [attempt limits]).
  EXPECT_THROW(shard.set_trainers(2, Attempt{5 + kMaxAttemptJump + 1, 1}), InvalidArgument);
  EXPECT_EQ(shard.num_trainers(), 3);
  // The same count is no change, from any attempt that is not stale.
  shard.set_trainers(3, Attempt{5, 2});
  // Within the attempt that works on the step: refused once anyone pushed or finished it.
  shard.push(0, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{5, 1});
  const std::string busy = message_of<InvalidArgument>([&] { shard.set_trainers(2, {5, 1}); });
  EXPECT_THAT(busy, HasSubstr("already works on step 0"));
  EXPECT_EQ(shard.num_trainers(), 3);
  EXPECT_GT(shard.pending_bytes(), 0);
  EXPECT_THROW(shard.set_trainers(0, Attempt{6, 1}), InvalidArgument);
}

TEST(ElasticTrainers, AWaiterOfTheOldMembershipStops) {
  TableShard shard(sgd_table(3), 0, 1);
  shard.push(0, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{0, 10});
  auto waiter = std::async(std::launch::async, [&] {
    return shard.finish_step(0, 0, Clock::now() + std::chrono::seconds(30), Attempt{0, 10});
  });
  // Usually it waits when the new membership comes (then it is woken: "the trainers changed");
  // if it comes first, the call is refused as of an older attempt. Either way it stops at once,
  // not at its deadline.
  EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
  shard.set_trainers(2, Attempt{1, 10});
  const std::string message = message_of<StaleAttemptError>([&] { waiter.get(); });
  EXPECT_THAT(message, ::testing::AnyOf(HasSubstr("the trainers changed from 3 to 2"),
                                        HasSubstr("from attempt 0 of the job was refused")));
  EXPECT_EQ(shard.step(), 0);
}

TEST(ElasticTrainers, AnAsyncTableDividesByTheNewCount) {
  TableShard shard(sgd_table(4, 4, UpdateMode::kAsync), 0, 1);
  shard.push(0, 0, ids_tensor({0}), at::full({1, 2}, 4.0f));
  EXPECT_TRUE(at::equal(row(shard, 0), at::full({2}, -1.0f)));
  shard.set_trainers(2, Attempt{1, 1});
  shard.push(1, 0, ids_tensor({0}), at::full({1, 2}, 4.0f));
  EXPECT_TRUE(at::equal(row(shard, 0), at::full({2}, -3.0f)));
}

}  // namespace
}  // namespace gradwire::ps
