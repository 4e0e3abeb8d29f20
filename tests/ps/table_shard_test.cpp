// Table shards: content independent of the server count, input validation that leaves the table
// unchanged, async pushes, the sync-step barrier (from threads too), snapshots.
#include "ps/core/table_shard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "error_message.h"
#include "gradwire/common/error.h"
#include "id_tensors.h"

namespace gradwire::ps {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

using testing::ids_tensor;
using testing::message_of;

TableConfig table(OptimizerKind kind, UpdateMode mode, int trainers) {
  TableConfig config;
  config.name = "emb";
  config.num_rows = 11;
  config.dim = 4;
  config.optimizer.kind = kind;
  config.optimizer.lr = 0.1;
  config.initializer.seed = 5;
  config.mode = mode;
  config.num_trainers = trainers;
  return config;
}

// The whole table as seen through `shards` (row id from its owner).
at::Tensor whole_table(const std::vector<std::unique_ptr<TableShard>>& shards, int64_t num_rows) {
  std::vector<at::Tensor> rows;
  const int servers = static_cast<int>(shards.size());
  for (int64_t id = 0; id < num_rows; ++id) {
    rows.push_back(shards[owner_of(id, servers)]->lookup(ids_tensor({id})));
  }
  return at::cat(rows);
}

TEST(TableShardTest, ContentIndependentOfServerCount) {
  // Sync mode: every shard counts the same steps, so even Adam's bias correction agrees.
  const TableConfig config = table(OptimizerKind::kAdam, UpdateMode::kSync, 1);
  const at::Tensor grads = at::randn({2, config.num_rows, config.dim});
  std::vector<at::Tensor> initial;
  std::vector<at::Tensor> trained;
  for (int servers = 1; servers <= 3; ++servers) {
    std::vector<std::unique_ptr<TableShard>> shards;
    for (int s = 0; s < servers; ++s) {
      shards.push_back(std::make_unique<TableShard>(config, s, servers));
    }
    initial.push_back(whole_table(shards, config.num_rows));
    // Two steps of the same gradients, routed to the owners (ids 0, 2, 4... in step 1).
    for (int64_t step = 0; step < 2; ++step) {
      for (int64_t id = step; id < config.num_rows; id += 1 + (step == 0)) {
        shards[owner_of(id, servers)]->push(0, step, ids_tensor({id}),
                                            grads[step][id].unsqueeze(0));
      }
      for (auto& shard : shards) EXPECT_TRUE(shard->finish_step(0, step, Clock::now()).applied);
    }
    trained.push_back(whole_table(shards, config.num_rows));
  }
  for (int i = 1; i < 3; ++i) {
    EXPECT_TRUE(at::equal(initial[0], initial[i])) << i + 1 << " servers";
    EXPECT_TRUE(at::equal(trained[0], trained[i])) << i + 1 << " servers";
  }
  EXPECT_FALSE(at::equal(initial[0], trained[0]));
}

TEST(TableShardTest, LookupReturnsCopiesInRequestOrder) {
  TableShard shard(table(OptimizerKind::kSgd, UpdateMode::kAsync, 1), 1, 2);
  EXPECT_EQ(shard.rows_here(), 5);  // ids 1, 3, 5, 7, 9
  const at::Tensor rows = shard.lookup(ids_tensor({9, 1, 9}));
  EXPECT_TRUE(at::equal(rows[0], rows[2]));
  EXPECT_FALSE(at::equal(rows[0], rows[1]));
  rows.fill_(0);
  EXPECT_FALSE(at::equal(shard.lookup(ids_tensor({9})), at::zeros({1, 4})));
  EXPECT_EQ(shard.lookup(at::empty({0}, at::kLong)).sizes(), (at::IntArrayRef{0, 4}));
}

TEST(TableShardTest, LookupErrorsNameTheFirstBadId) {
  TableConfig config = table(OptimizerKind::kSgd, UpdateMode::kAsync, 1);
  config.num_rows = 30;
  TableShard shard(config, 0, 2);
  const ShardSnapshot before = shard.snapshot();
  EXPECT_THAT(message_of<InvalidArgument>([&] {
                shard.lookup(ids_tensor({0, 2, 17, 3}));
              }),
              HasSubstr("id 17 belongs to server 1 of 2"));
  EXPECT_THAT(message_of<InvalidArgument>([&] {
                shard.lookup(ids_tensor({4, -4}));
              }),
              HasSubstr("id -4 is negative; it is at position 1"));
  EXPECT_THAT(message_of<InvalidArgument>([&] { shard.lookup(ids_tensor({32})); }),
              HasSubstr("id 32 is out of range"));
  EXPECT_THAT(message_of<InvalidArgument>([&] { shard.lookup(at::zeros({2}, at::kInt)); }),
              HasSubstr("int64 1-D"));
  EXPECT_TRUE(at::equal(shard.snapshot().weights, before.weights));
}

TEST(TableShardTest, BadPushLeavesTableUnchanged) {
  TableShard shard(table(OptimizerKind::kAdagrad, UpdateMode::kAsync, 2), 0, 1);
  const ShardSnapshot before = shard.snapshot();
  const at::Tensor two_rows = at::ones({2, 4});
  EXPECT_THAT(message_of<InvalidArgument>([&] {
                shard.push(0, 0, ids_tensor({1, 11}), two_rows);
              }),
              HasSubstr("id 11"));
  EXPECT_THAT(message_of<InvalidArgument>([&] {
                shard.push(0, 0, ids_tensor({1, 2}), at::ones({2, 3}));
              }),
              HasSubstr("float32 [2, 4]"));
  EXPECT_THAT(message_of<InvalidArgument>([&] {
                shard.push(0, 0, ids_tensor({1, 2}), two_rows.to(at::kDouble));
              }),
              HasSubstr("float32"));
  EXPECT_THAT(message_of<InvalidArgument>([&] { shard.push(0, 0, ids_tensor({1}), two_rows); }),
              HasSubstr("for 1 ids"));
  at::Tensor nan_grads = at::ones({2, 4});
  nan_grads[1][2] = NAN;
  EXPECT_THAT(message_of<InvalidArgument>([&] {
                shard.push(0, 0, ids_tensor({1, 2}), nan_grads);
              }),
              HasSubstr("not finite"));
  EXPECT_THAT(message_of<InvalidArgument>([&] {
                shard.push(2, 0, ids_tensor({1, 2}), two_rows);
              }),
              HasSubstr("trainer 2"));
  EXPECT_EQ(shard.step(), 0);
  const ShardSnapshot after = shard.snapshot();
  EXPECT_TRUE(at::equal(after.weights, before.weights));
  EXPECT_TRUE(at::equal(after.optimizer_state[0].second, before.optimizer_state[0].second));
}

TEST(TableShardTest, AsyncPushAppliesAtOnceScaledAndSummed) {
  TableConfig config = table(OptimizerKind::kSgd, UpdateMode::kAsync, 2);
  config.optimizer.lr = 1.0;
  TableShard mean(config, 0, 1);
  config.reduction = GradientReduction::kSum;
  TableShard sum(config, 0, 1);
  const at::Tensor start = mean.lookup(ids_tensor({3, 5}));
  const at::Tensor grads = at::arange(0, 12, at::kFloat).reshape({3, 4});
  mean.push(1, 0, ids_tensor({3, 5, 3}), grads);
  sum.push(1, 0, ids_tensor({3, 5, 3}), grads);
  EXPECT_EQ(mean.step(), 1);
  const at::Tensor summed = at::stack({grads[0] + grads[2], grads[1]});
  EXPECT_TRUE(at::allclose(mean.lookup(ids_tensor({3, 5})), start - summed / 2));
  EXPECT_TRUE(at::allclose(sum.lookup(ids_tensor({3, 5})), start - summed));
  const StepOutcome outcome = mean.finish_step(0, 99, Clock::now());
  EXPECT_TRUE(outcome.applied);
  EXPECT_EQ(outcome.step, 1);
}

// Applies what a sync step of `pushes` (trainer's ids and grads) should do, to a copy of `start`.
at::Tensor expected_after_step(const TableConfig& config, const at::Tensor& start,
                               const std::vector<std::pair<at::Tensor, at::Tensor>>& pushes) {
  std::vector<at::Tensor> ids;
  std::vector<at::Tensor> grads;
  for (const auto& push : pushes) {
    const SparseRows rows = coalesce(push.first, push.second);  // each trainer's own sum
    ids.push_back(rows.ids);
    grads.push_back(rows.values);
  }
  const SparseRows total = coalesce(at::cat(ids), at::cat(grads));
  at::Tensor weights = start.clone();
  auto optimizer = make_sparse_optimizer(config.optimizer, config.num_rows, config.dim);
  optimizer->apply(weights, total.ids, total.values / config.num_trainers, 1);
  return weights;
}

TEST(TableShardTest, SyncAppliesOnceAfterBothTrainersFinished) {
  const TableConfig config = table(OptimizerKind::kAdam, UpdateMode::kSync, 2);
  TableShard shard(config, 0, 1);
  const at::Tensor all_ids = at::arange(0, config.num_rows, at::kLong);
  const at::Tensor start = shard.lookup(all_ids);
  const std::pair<at::Tensor, at::Tensor> push0{ids_tensor({0, 2, 2}), at::randn({3, 4})};
  const std::pair<at::Tensor, at::Tensor> push1{ids_tensor({2, 7}), at::randn({2, 4})};
  shard.push(0, 0, push0.first, push0.second);
  shard.push(1, 0, push1.first, push1.second);
  // Trainer 0 finished; trainer 1 not yet: nothing applied, the wait times out naming trainer 1.
  const StepOutcome waiting = shard.finish_step(0, 0, Clock::now());
  EXPECT_FALSE(waiting.applied);
  EXPECT_EQ(waiting.step, 0);
  EXPECT_THAT(waiting.missing_trainers, ElementsAre(1));
  EXPECT_TRUE(at::equal(shard.lookup(all_ids), start));
  EXPECT_THAT(message_of<InvalidArgument>([&] {
                shard.push(0, 0, ids_tensor({1}), at::ones({1, 4}));
              }),
              HasSubstr("after finishing it"));
  // Trainer 1 finishes: the step is applied once, as the mean of both coalesced pushes.
  const StepOutcome done = shard.finish_step(1, 0, Clock::now());
  EXPECT_TRUE(done.applied);
  EXPECT_EQ(done.step, 1);
  EXPECT_EQ(shard.step(), 1);
  EXPECT_LE((shard.lookup(all_ids) - expected_after_step(config, start, {push0, push1}))
                .abs()
                .max()
                .item<double>(),
            1e-6);
  // Asking again about step 0 answers at once; step 0 pushes and future steps are refused.
  EXPECT_TRUE(shard.finish_step(0, 0, Clock::now()).applied);
  EXPECT_THAT(message_of<InvalidArgument>([&] {
                shard.push(0, 0, ids_tensor({1}), at::ones({1, 4}));
              }),
              HasSubstr("the table is at step 1"));
  EXPECT_THAT(message_of<InvalidArgument>([&] { shard.finish_step(0, 3, Clock::now()); }),
              HasSubstr("finished step 3, but the table is at step 1"));
}

// A trainer's pushes reach the shard on several handler threads, so in any order: the step's
// table does not depend on it (bit for bit, also where the order of a sum would round otherwise).
TEST(TableShardTest, TheOrderInWhichATrainersPushesArriveDoesNotChangeTheStep) {
  TableConfig config = table(OptimizerKind::kSgd, UpdateMode::kSync, 2);
  config.optimizer.lr = 1.0;
  const at::Tensor all_ids = at::arange(0, config.num_rows, at::kLong);
  // Row 3 gets 1e8, 4 and 4 from trainer 0 in three pushes: in float, (1e8 + 4) + 4 is 1e8 and
  // (4 + 4) + 1e8 is 1e8 + 8.
  const std::vector<std::pair<at::Tensor, at::Tensor>> pushes = {
      {ids_tensor({1, 3}), at::full({2, 4}, 1e8f)},
      {ids_tensor({3, 5}), at::full({2, 4}, 4.0f)},
      {ids_tensor({3, 9}), at::full({2, 4}, 4.0f)}};
  std::vector<at::Tensor> results;
  for (const std::vector<int>& order : {std::vector<int>{0, 1, 2}, {2, 1, 0}, {1, 2, 0}}) {
    TableShard shard(config, 0, 1);
    for (int i : order) shard.push(0, 0, pushes[i].first, pushes[i].second);
    for (int i : {2, 0, 1}) shard.push(1, 0, pushes[i].first, pushes[i].second);
    shard.finish_step(0, 0, Clock::now());
    ASSERT_TRUE(shard.finish_step(1, 0, Clock::now()).applied);
    results.push_back(shard.lookup(all_ids));
  }
  EXPECT_TRUE(at::equal(results[0], results[1]));
  EXPECT_TRUE(at::equal(results[0], results[2]));
}

TEST(TableShardTest, WaiterOnAMissingTrainerTimesOut) {
  TableShard shard(table(OptimizerKind::kSgd, UpdateMode::kSync, 3), 0, 1);
  shard.push(0, 0, ids_tensor({1}), at::ones({1, 4}));
  EXPECT_FALSE(shard.finish_step(2, 0, Clock::now()).applied);
  const StepOutcome outcome =
      shard.finish_step(0, 0, Clock::now() + std::chrono::milliseconds(100));
  EXPECT_FALSE(outcome.applied);
  EXPECT_EQ(outcome.step, 0);
  EXPECT_THAT(outcome.missing_trainers, ElementsAre(1));
}

TEST(TableShardTest, SyncStepsFromThreads) {
  constexpr int kTrainers = 4;
  constexpr int64_t kSteps = 5;
  const TableConfig config = table(OptimizerKind::kAdagrad, UpdateMode::kSync, kTrainers);
  TableShard shard(config, 0, 1);
  TableShard reference(config, 0, 1);  // driven step by step from this thread
  // pushes[step][trainer]
  std::vector<std::vector<std::pair<at::Tensor, at::Tensor>>> pushes(kSteps);
  for (auto& step : pushes) {
    for (int t = 0; t < kTrainers; ++t) {
      step.emplace_back(at::randint(0, config.num_rows, {6}, at::kLong), at::randn({6, 4}));
    }
  }
  std::vector<std::vector<StepOutcome>> outcomes(kTrainers);
  std::vector<std::thread> threads;
  for (int t = 0; t < kTrainers; ++t) {
    threads.emplace_back([&, t] {
      for (int64_t step = 0; step < kSteps; ++step) {
        shard.lookup(pushes[step][t].first);
        shard.push(t, step, pushes[step][t].first, pushes[step][t].second);
        outcomes[t].push_back(shard.finish_step(t, step, Clock::now() + std::chrono::seconds(30)));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kTrainers; ++t) {
    ASSERT_EQ(outcomes[t].size(), static_cast<size_t>(kSteps));
    for (int64_t step = 0; step < kSteps; ++step) {
      EXPECT_TRUE(outcomes[t][step].applied) << "trainer " << t << " step " << step;
      EXPECT_GE(outcomes[t][step].step, step + 1);
    }
  }
  for (int64_t step = 0; step < kSteps; ++step) {
    for (int t = 0; t < kTrainers; ++t) {
      reference.push(t, step, pushes[step][t].first, pushes[step][t].second);
    }
    for (int t = 0; t < kTrainers; ++t) reference.finish_step(t, step, Clock::now());
  }
  EXPECT_EQ(shard.step(), kSteps);
  const at::Tensor all_ids = at::arange(0, config.num_rows, at::kLong);
  EXPECT_LE((shard.lookup(all_ids) - reference.lookup(all_ids)).abs().max().item<double>(), 1e-6);
}

TEST(TableShardTest, SnapshotRestores) {
  const TableConfig config = table(OptimizerKind::kAdam, UpdateMode::kAsync, 1);
  TableShard shard(config, 1, 3);
  shard.push(0, 0, ids_tensor({1, 4}), at::randn({2, 4}));
  const ShardSnapshot snapshot = shard.snapshot();
  EXPECT_EQ(snapshot.step, 1);
  const at::Tensor snapshot_weights = snapshot.weights.clone();
  auto restored = TableShard::restore(shard.snapshot());
  EXPECT_EQ(restored->step(), 1);
  EXPECT_EQ(restored->server_index(), 1);
  EXPECT_EQ(restored->num_servers(), 3);
  const at::Tensor grads = at::randn({2, 4});
  shard.push(0, 0, ids_tensor({4, 7}), grads);
  restored->push(0, 0, ids_tensor({4, 7}), grads);
  const at::Tensor ids = ids_tensor({1, 4, 7, 10});
  EXPECT_TRUE(at::equal(shard.lookup(ids), restored->lookup(ids)));
  // The snapshot is a deep copy: later updates do not reach it.
  EXPECT_TRUE(at::equal(snapshot.weights, snapshot_weights));
  EXPECT_FALSE(at::equal(snapshot.weights, shard.snapshot().weights));
  ShardSnapshot wrong = shard.snapshot();
  wrong.weights = at::zeros({3, 4});
  EXPECT_THAT(message_of<InvalidArgument>([&] { TableShard::restore(wrong); }),
              HasSubstr("float32 [4, 4]"));
  wrong = shard.snapshot();
  wrong.optimizer_state.pop_back();
  EXPECT_THAT(message_of<InvalidArgument>([&] { TableShard::restore(wrong); }),
              HasSubstr("missing"));
  EXPECT_THROW(TableShard(config, 3, 3), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::ps
