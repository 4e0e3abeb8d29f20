// Bounded staleness of async tables (TableConfig::staleness): a trainer's step s returns only once
// every trainer finished step s - K or later. Shown by the steps the shard records, not by timing:
// a trainer K steps ahead is let through, one step further it waits (and its deadline names the
// trainer behind) until the slow one finishes a step. Also dense tables awaiting trainer 0's
// values and the assign optimizer of the summation role.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "error_message.h"
#include "gradwire/common/error.h"
#include "id_tensors.h"
#include "ps/core/table_shard.h"

namespace gradwire::ps {
namespace staleness_test {  // not anonymous: unity batches (docs/architecture.md "Tests")

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using testing::ids_tensor;
using testing::message_of;

TableConfig stale_table(int trainers, int staleness) {
  TableConfig config;
  config.name = "stale";
  config.num_rows = 4;
  config.dim = 2;
  config.optimizer.lr = 1.0;
  config.initializer.kind = InitializerKind::kZeros;
  config.mode = UpdateMode::kAsync;
  config.num_trainers = trainers;
  config.staleness = staleness;
  return config;
}

Clock::time_point soon() { return Clock::now() + std::chrono::milliseconds(50); }

TEST(Staleness, ATrainerRunsAtMostKStepsAheadOfTheSlowest) {
  for (const int k : {1, 3}) {
    TableShard shard(stale_table(2, k), 0, 1);
    // Trainer 0 alone finishes steps 0 .. k-1: the slowest (trainer 1, at 0 steps) is at most k
    // behind after each.
    for (int64_t s = 0; s < k; ++s) {
      const StepOutcome outcome = shard.finish_step(0, s, soon());
      EXPECT_TRUE(outcome.applied) << "k " << k << " step " << s;
      EXPECT_EQ(outcome.step, 0);  // the slowest trainer's finished steps
    }
    // Step k would put it k + 1 ahead: it waits, and the deadline names trainer 1.
    const StepOutcome blocked = shard.finish_step(0, k, soon());
    EXPECT_FALSE(blocked.applied);
    EXPECT_EQ(blocked.missing_trainers, std::vector<int>{1});
    // Trainer 1 finishing its step 0 lets a waiting trainer 0 through.
    auto waiting = std::async(std::launch::async, [&] {
      return shard.finish_step(0, k, Clock::now() + std::chrono::seconds(20));
    });
    const StepOutcome slow = shard.finish_step(1, 0, soon());
    EXPECT_TRUE(slow.applied);
    const StepOutcome released = waiting.get();
    EXPECT_TRUE(released.applied);
    EXPECT_EQ(released.step, 1);
  }
}

TEST(Staleness, IsRefusedForSyncTablesAndOutOfRange) {
  TableConfig config = stale_table(2, 2);
  config.mode = UpdateMode::kSync;
  EXPECT_THAT(message_of<InvalidArgument>([&] { validate(config); }), HasSubstr("staleness"));
  config = stale_table(2, -1);
  EXPECT_THAT(message_of<InvalidArgument>([&] { validate(config); }), HasSubstr("staleness"));
}

TEST(DenseShard, LookupsWaitForTrainerZerosValuesAndAssignWorksOnce) {
  TableConfig config = stale_table(2, 0);
  config.name = "dense";
  config.kind = TableKind::kDense;
  config.mode = UpdateMode::kSync;
  TableShard shard(config, 0, 1);
  EXPECT_TRUE(shard.awaiting_values());
  EXPECT_THAT(message_of<TimeoutError>([&] { shard.lookup(ids_tensor({0}), soon()); }),
              HasSubstr("trainer 0"));
  EXPECT_THAT(message_of<InvalidArgument>([&] {
                shard.push(1, 0, ids_tensor({0}), at::ones({1, 2}));
              }),
              HasSubstr("before the table has its values"));
  EXPECT_THAT(message_of<InvalidArgument>([&] {
                shard.assign(1, ids_tensor({0}), at::ones({1, 2}), true);
              }),
              HasSubstr("only trainer 0"));
  auto waiting = std::async(std::launch::async, [&] {
    return shard.lookup(ids_tensor({0, 3}), Clock::now() + std::chrono::seconds(20));
  });
  shard.assign(0, ids_tensor({0, 1}), at::full({2, 2}, 7.0), false);
  shard.assign(0, ids_tensor({2, 3}), at::full({2, 2}, 9.0), true);
  EXPECT_TRUE(waiting.get().equal(at::tensor({7.0f, 7.0f, 9.0f, 9.0f}).view({2, 2})));
  EXPECT_FALSE(shard.awaiting_values());
  EXPECT_THAT(message_of<InvalidArgument>([&] {
                shard.assign(0, ids_tensor({0}), at::ones({1, 2}), true);
              }),
              HasSubstr("has its values already"));
}

TEST(DenseShard, TheAssignOptimizerKeepsTheStepsMeanGradient) {
  TableConfig config = stale_table(2, 0);
  config.kind = TableKind::kDense;
  config.mode = UpdateMode::kSync;
  config.optimizer.kind = OptimizerKind::kAssign;
  TableShard shard(config, 0, 1);
  shard.assign(0, ids_tensor({}), at::empty({0, 2}), true);
  shard.push(0, 0, ids_tensor({1}), at::full({1, 2}, 2.0));
  shard.push(1, 0, ids_tensor({1}), at::full({1, 2}, 4.0));
  auto first = std::async(std::launch::async, [&] {
    return shard.finish_step(0, 0, Clock::now() + std::chrono::seconds(20));
  });
  EXPECT_TRUE(shard.finish_step(1, 0, Clock::now() + std::chrono::seconds(20)).applied);
  EXPECT_TRUE(first.get().applied);
  EXPECT_TRUE(shard.lookup(ids_tensor({1})).equal(at::full({1, 2}, 3.0)));
  config.mode = UpdateMode::kAsync;
  EXPECT_THAT(message_of<InvalidArgument>([&] { validate(config); }), HasSubstr("sync"));
}

}  // namespace staleness_test
}  // namespace gradwire::ps
