// An elastic job's new membership on a table shard (TableShard::set_trainers, docs/elastic.md
// "Parameter servers"): the count changes only with the newest attempt, the step in progress is
// discarded, waiters stop, the next step needs the new count and divides by it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>

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

// 4 x 2 zeros, SGD lr 1, mean over `trainers`: a step with gradient g from each trainer moves
// a row to exactly -g.
TableConfig elastic_table(int trainers, UpdateMode mode = UpdateMode::kSync) {
  TableConfig config;
  config.name = "emb";
  config.num_rows = 4;
  config.dim = 2;
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.lr = 1.0;
  config.initializer.kind = InitializerKind::kZeros;
  config.mode = mode;
  config.num_trainers = trainers;
  return config;
}

at::Tensor row_now(const TableShard& shard, int64_t id) { return shard.lookup(ids_tensor({id}))[0]; }

const Clock::time_point kPassed{};  // a deadline already passed: finish_step does not wait

TEST(ElasticTrainers, ANewMembershipDiscardsTheStepInProgressAndStepsWithItsCount) {
  TableShard shard(elastic_table(3), 0, 1);
  // Generation 0 of 3 trainers: trainers 0 and 2 pushed step 0, trainer 1 died before it.
  shard.push(0, 0, ids_tensor({0}), at::full({1, 2}, 3.0f), Attempt{0, 10});
  shard.push(2, 0, ids_tensor({0}), at::full({1, 2}, 3.0f), Attempt{0, 30});
  EXPECT_FALSE(shard.finish_step(0, 0, kPassed, Attempt{0, 10}).applied);
  // Generation 1: the two survivors, renumbered 0 and 1.
  shard.set_trainers(2, Attempt{1, 10});
  EXPECT_EQ(shard.num_trainers(), 2);
  EXPECT_EQ(shard.current_config().num_trainers, 2);
  EXPECT_EQ(shard.config().num_trainers, 3);  // where it began
  EXPECT_EQ(shard.pending_bytes(), 0);
  EXPECT_TRUE(at::equal(row_now(shard, 0), at::zeros({2})));
  // Trainer 2 of the old membership is no trainer now.
  EXPECT_THROW(shard.push(2, 0, ids_tensor({0}), at::ones({1, 2}), Attempt{1, 30}),
               InvalidArgument);
  // The step redone by two: the mean divides by 2, and two finishes apply it.
  shard.push(0, 0, ids_tensor({0}), at::full({1, 2}, 1.0f), Attempt{1, 10});
  shard.push(1, 0, ids_tensor({0}), at::full({1, 2}, 3.0f), Attempt{1, 30});
  EXPECT_FALSE(shard.finish_step(0, 0, kPassed, Attempt{1, 10}).applied);
  EXPECT_TRUE(shard.finish_step(1, 0, kPassed, Attempt{1, 30}).applied);
  EXPECT_TRUE(at::equal(row_now(shard, 0), at::full({2}, -2.0f)));
  // A third trainer joins (generation 2): the next step needs three.
  shard.set_trainers(3, Attempt{2, 10});
  shard.push(0, 1, ids_tensor({1}), at::full({1, 2}, 3.0f), Attempt{2, 10});
  EXPECT_FALSE(shard.finish_step(0, 1, kPassed, Attempt{2, 10}).applied);
  EXPECT_FALSE(shard.finish_step(1, 1, kPassed, Attempt{2, 30}).applied);
  EXPECT_TRUE(shard.finish_step(2, 1, kPassed, Attempt{2, 40}).applied);
  EXPECT_TRUE(at::equal(row_now(shard, 1), at::full({2}, -1.0f)));
  // A snapshot keeps the count now.
  EXPECT_EQ(shard.snapshot().config.num_trainers, 3);
}

TEST(ElasticTrainers, OnlyTheNewestAttemptChangesTheCount) {
  TableShard shard(elastic_table(2), 0, 1);
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
  TableShard shard(elastic_table(3), 0, 1);
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
  TableShard shard(elastic_table(4, UpdateMode::kAsync), 0, 1);
  shard.push(0, 0, ids_tensor({0}), at::full({1, 2}, 4.0f));
  EXPECT_TRUE(at::equal(row_now(shard, 0), at::full({2}, -1.0f)));
  shard.set_trainers(2, Attempt{1, 1});
  shard.push(1, 0, ids_tensor({0}), at::full({1, 2}, 4.0f));
  EXPECT_TRUE(at::equal(row_now(shard, 0), at::full({2}, -3.0f)));
}

}  // namespace
}  // namespace gradwire::ps
