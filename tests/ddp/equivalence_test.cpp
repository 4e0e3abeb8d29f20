// The core correctness proof: N ranks of DDP, each on its chunk of every global batch, end with
// the parameters of one process that trains on the whole batch (same SGD with momentum).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "gradwire/common/error.h"
#include "gradwire/ddp/comm_hook.h"
#include "gradwire/ddp/ddp.h"
#include "reference_training.h"
#include "test_models.h"

namespace gradwire::ddp::testing {
namespace {

constexpr int kSteps = 4;
constexpr int64_t kRowsPerRank = 4;

// Six layers of 16: each Linear is 1,088 bytes (weight 1,024 + bias 64).
Mlp deep_mlp() { return Mlp(std::vector<int64_t>{16, 16, 16, 16, 16, 16, 4}); }

// Caps of ~1 KiB: about one layer per bucket.
DdpOptions tiny_buckets() {
  DdpOptions options;
  options.bucket_cap_mb = 0.001;
  options.first_bucket_mb = 0.001;
  return options;
}

class MlpEquivalence : public ::testing::TestWithParam<int> {};

// World 1 has no communication partner: DDP must equal plain training.
TEST_P(MlpEquivalence, MatchesSingleProcessOnConcatenatedBatch) {
  torch::set_num_threads(1);
  const int world = GetParam();
  auto batches = make_batches(kSteps, kRowsPerRank * world, {5}, 3, 7);
  auto replicas = make_replicas(world + 1, small_mlp);
  auto reference = train_reference(replicas.back(), batches);
  replicas.pop_back();
  auto run = train_ddp(replicas, batches, DdpOptions{});
  expect_all_ranks_close(run, reference, kFloatTolerance);
  // Training moved the parameters: the comparison is not trivially true.
  auto initial = snapshot_parameters(*make_replicas(1, small_mlp)[0]);
  EXPECT_FALSE(torch::allclose(initial.at("fc0.weight"), reference.at("fc0.weight")));
}

INSTANTIATE_TEST_SUITE_P(Worlds, MlpEquivalence, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

// On shm, buckets lie in shared buffers and are reduced in place (DdpOptions::shared_buckets):
// many small buckets at different offsets, before and after the rebuild, with gradients copied
// in and out or living in the buckets, and in ordinary memory for comparison.
TEST(DdpEquivalence, SharedBucketsOnShmMatchSingleProcess) {
  torch::set_num_threads(1);
  const int world = 3;
  auto batches = make_batches(kSteps, kRowsPerRank * world, {16}, 4, 5);
  auto replicas = make_replicas(world + 1, deep_mlp);
  auto reference = train_reference(replicas.back(), batches);
  for (bool view : {false, true}) {
    for (bool shared : {true, false}) {
      DdpOptions options = tiny_buckets();
      options.gradient_as_bucket_view = view;
      options.shared_buckets = shared;
      auto run = train_ddp(make_replicas(world, deep_mlp), batches, options, "shm");
      expect_all_ranks_close(run, reference, kFloatTolerance);
      EXPECT_TRUE(run.stats[0].buckets_rebuilt);
    }
  }
}

TEST(DdpEquivalence, UnusedBranchWithFindUnusedParameters) {
  torch::set_num_threads(1);
  const int world = 2;
  auto batches = make_batches(kSteps, kRowsPerRank * world, {8}, 4, 11);
  auto replicas = make_replicas(world + 1, [] { return UnusedBranch(); });
  auto reference = train_reference(replicas.back(), batches);
  replicas.pop_back();
  DdpOptions options;
  options.find_unused_parameters = true;
  // The used gradients live in the buckets (reducer.cpp, Note [homed gradients]); the reduction
  // must leave the unused ones alone.
  for (const char* backend : {"gloo", "shm"}) {
    SCOPED_TRACE(backend);
    auto run =
        train_ddp(make_replicas(world, [] { return UnusedBranch(); }), batches, options, backend);
    expect_all_ranks_close(run, reference, kFloatTolerance);
    for (int r = 0; r < world; ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      // Unused on every rank: .grad never touched, so it stays undefined.
      EXPECT_EQ(run.defined_grads[r].count("unused.weight"), 0u);
      EXPECT_EQ(run.defined_grads[r].count("unused.bias"), 0u);
      EXPECT_EQ(run.defined_grads[r].count("fc1.weight"), 1u);
      EXPECT_EQ(run.defined_grads[r].count("fc2.bias"), 1u);
      // Documented: no rebuild with find_unused_parameters unless static_graph.
      EXPECT_FALSE(run.stats[r].buckets_rebuilt);
    }
  }
}

TEST(DdpEquivalence, TiedWeightsRegisteredTwice) {
  torch::set_num_threads(1);
  const int world = 2;
  auto batches = make_batches(kSteps, kRowsPerRank * world, {6}, 6, 13);
  auto replicas = make_replicas(world + 1, [] { return Tied(); });
  ASSERT_TRUE(replicas[0]->encoder->weight.is_same(replicas[0]->decoder->weight));
  auto reference = train_reference(replicas.back(), batches);
  replicas.pop_back();
  auto run = train_ddp(replicas, batches, DdpOptions{});
  expect_all_ranks_close(run, reference, kFloatTolerance);
  for (int r = 0; r < world; ++r) {
    EXPECT_TRUE(torch::equal(run.parameters[r].at("encoder.weight"),
                             run.parameters[r].at("decoder.weight")))
        << "rank " << r;
  }
}

void expect_many_buckets_match(const DdpOptions& options, int steps) {
  torch::set_num_threads(1);
  const int world = 2;
  auto batches = make_batches(steps, kRowsPerRank * world, {16}, 4, 17);
  auto replicas = make_replicas(world + 1, deep_mlp);
  auto reference = train_reference(replicas.back(), batches);
  replicas.pop_back();
  auto run = train_ddp(replicas, batches, options);
  for (int r = 0; r < world; ++r) {
    EXPECT_GT(run.stats[r].buckets.size(), 3u) << "rank " << r;
    // Rebuilt after the first iteration; the later iterations ran on the rebuilt layout.
    EXPECT_TRUE(run.stats[r].buckets_rebuilt) << "rank " << r;
  }
  expect_all_ranks_close(run, reference, kFloatTolerance);
}

TEST(DdpEquivalence, MoreThanThreeBuckets) { expect_many_buckets_match(tiny_buckets(), 5); }

TEST(DdpEquivalence, MoreThanThreeBucketsGradientAsBucketView) {
  auto options = tiny_buckets();
  options.gradient_as_bucket_view = true;
  expect_many_buckets_match(options, 5);
}

// The measurement schedules reduce the same buckets, only later: same result.
TEST(DdpEquivalence, MoreThanThreeBucketsReducedAfterBackward) {
  auto options = tiny_buckets();
  options.schedule = ReductionSchedule::kAfterBackward;
  expect_many_buckets_match(options, 5);
}

TEST(DdpEquivalence, MoreThanThreeBucketsReducedAfterBackwardOneByOne) {
  auto options = tiny_buckets();
  options.schedule = ReductionSchedule::kAfterBackwardSync;
  expect_many_buckets_match(options, 5);
}

// Default caps: one bucket; the rebuild after the first iteration still happens.
TEST(DdpEquivalence, BucketsRebuiltAfterTwoIterations) {
  torch::set_num_threads(1);
  const int world = 2;
  auto batches = make_batches(2, kRowsPerRank * world, {5}, 3, 19);
  auto replicas = make_replicas(world + 1, small_mlp);
  auto reference = train_reference(replicas.back(), batches);
  replicas.pop_back();
  auto run = train_ddp(replicas, batches, DdpOptions{});
  for (int r = 0; r < world; ++r) EXPECT_TRUE(run.stats[r].buckets_rebuilt) << "rank " << r;
  expect_all_ranks_close(run, reference, kFloatTolerance);
}

class HookEquivalence : public ::testing::TestWithParam<std::string> {};

TEST_P(HookEquivalence, CompressedHookMatchesWithinRounding) {
  torch::set_num_threads(1);
  const int world = 2;
  auto batches = make_batches(kSteps, kRowsPerRank * world, {16}, 4, 23);
  auto replicas = make_replicas(world + 1, deep_mlp);
  auto reference = train_reference(replicas.back(), batches);
  auto options = tiny_buckets();
  // One hook for both ranks' reducers: it keeps a wire buffer per bucket (a shared buffer on shm,
  // reduced in place), and the rebuilt layout after the first iteration gets new ones.
  options.comm_hook = GetParam() == "fp16" ? fp16_compress_hook() : bf16_compress_hook();
  for (const char* backend : {"gloo", "shm"}) {
    SCOPED_TRACE(backend);
    auto run = train_ddp(make_replicas(world, deep_mlp), batches, options, backend);
    expect_all_ranks_close(run, reference, kCompressedTolerance);
    for (int r = 0; r < world; ++r) {
      EXPECT_EQ(run.stats[r].comm_hook, GetParam()) << "rank " << r;
      EXPECT_TRUE(run.stats[r].buckets_rebuilt) << "rank " << r;
    }
    // All ranks apply the same averaged (rounded) gradients: they agree with each other exactly.
    expect_close(run.parameters[1], run.parameters[0], Tolerance{0, 0}, "rank 1 vs rank 0");
  }
}

INSTANTIATE_TEST_SUITE_P(Hooks, HookEquivalence, ::testing::Values("fp16", "bf16"),
                         [](const auto& info) { return info.param; });

// The noop hook exchanges nothing: ranks trained on different chunks end apart (with the
// allreduce hook they end equal, MlpEquivalence). On shm, where nothing is divided on fill, each
// rank trains exactly as if alone on its own chunk: its gradients, living in the buckets
// (reducer.cpp, Note [homed gradients]), must come back as they were.
TEST(CommHooks, NoopHookLeavesEachRankWithItsOwnGradients) {
  torch::set_num_threads(1);
  const int world = 2;
  auto batches = make_batches(kSteps, kRowsPerRank * world, {16}, 4, 9);
  DdpOptions options = tiny_buckets();
  options.comm_hook = make_comm_hook("noop");
  for (const char* backend : {"gloo", "shm"}) {
    SCOPED_TRACE(backend);
    auto run = train_ddp(make_replicas(world, deep_mlp), batches, options, backend);
    EXPECT_FALSE(
        torch::allclose(run.parameters[0].at("fc0.weight"), run.parameters[1].at("fc0.weight")));
    if (std::string(backend) != "shm") continue;  // Gloo divides by the world size on fill
    for (int r = 0; r < world; ++r) {
      std::vector<Batch> own;
      for (const auto& batch : batches) {
        own.push_back({rank_chunk(batch.input, r, world), rank_chunk(batch.target, r, world)});
      }
      auto alone = train_reference(make_replicas(1, deep_mlp).back(), own);
      expect_close(run.parameters[r], alone, kFloatTolerance, "rank " + std::to_string(r));
    }
  }
}

TEST(CommHooks, MakeCommHookByName) {
  EXPECT_EQ(make_comm_hook("allreduce")->name(), "allreduce");
  EXPECT_EQ(make_comm_hook("fp16")->name(), "fp16");
  EXPECT_EQ(make_comm_hook("bf16")->name(), "bf16");
  EXPECT_EQ(make_comm_hook("noop")->name(), "noop");
  EXPECT_THROW(make_comm_hook("int8"), InvalidArgument);
  try {
    make_comm_hook("int8");
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("allreduce"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gradwire::ddp::testing
