// Join for uneven inputs (include/gradwire/ddp/join.h): ranks with different numbers of batches
// end equal to one process that trains, at each step, on the batches of the ranks still training
// that step, with the same divisor rule: the mean over those batches (divided by the ranks
// still training) or that mean scaled by ranks training / world size (divided by the world size).
#include "gradwire/ddp/join.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ddp/join_round.h"
#include "gradwire/common/error.h"
#include "gradwire/ddp/comm_hook.h"
#include "gradwire/ddp/ddp.h"
#include "reference_training.h"
#include "test_models.h"

namespace gradwire::ddp::testing {
// A namespace of its own: in the unity build its helpers meet other files'.
namespace join_test {
namespace {

constexpr int64_t kRowsPerBatch = 6;  // splits into 1 or 3 micro-batches
// Float32 training of a few steps: the rounding of a different summation order stays far below.
constexpr Tolerance kJoinTolerance{1e-6, 1e-6};

Mlp deep_mlp() { return Mlp(std::vector<int64_t>{16, 16, 16, 16, 16, 4}); }

// The MLP of the small tests with a constant buffer, so that every forward broadcasts buffers
// (and so communicates under no_sync as well).
struct BufferedMlpImpl : torch::nn::Module {
  BufferedMlpImpl() : mlp(register_module("mlp", small_mlp())) {
    scale = register_buffer("scale", torch::ones({1}));
  }
  torch::Tensor forward(torch::Tensor x) { return mlp->forward(x) * scale; }
  Mlp mlp;
  torch::Tensor scale;
};
TORCH_MODULE(BufferedMlp);

// Rank r's batches: counts[r] of them, each of kRowsPerBatch rows; local[r][s] is its step s.
using LocalBatches = std::vector<std::vector<Batch>>;

LocalBatches make_local_batches(const std::vector<int>& counts, int64_t inputs, int64_t outputs,
                                uint64_t seed) {
  torch::manual_seed(seed);
  LocalBatches local(counts.size());
  for (size_t r = 0; r < counts.size(); ++r) {
    for (int s = 0; s < counts[r]; ++s) {
      local[r].push_back(
          {torch::randn({kRowsPerBatch, inputs}), torch::randn({kRowsPerBatch, outputs})});
    }
  }
  return local;
}

// The ranks with a batch at step s.
std::vector<int> training_at(const std::vector<int>& counts, int step) {
  std::vector<int> ranks;
  for (size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] > step) ranks.push_back(static_cast<int>(r));
  }
  return ranks;
}

// One process: at step s, the mean-MSE over the concatenated batches of the ranks training at s,
// scaled by (ranks training) / divisor. `micro` > 1: each batch is split in `micro` row chunks
// whose losses (each divided by `micro`) accumulate before the step, as the no_sync test does.
template <typename Holder>
Snapshot train_reference_join(Holder model, const LocalBatches& local,
                              const std::vector<int>& counts, bool divide_by_world, int micro) {
  auto optimizer = make_sgd(*model);
  const int world = static_cast<int>(counts.size());
  const int steps = *std::max_element(counts.begin(), counts.end());
  for (int s = 0; s < steps; ++s) {
    const auto ranks = training_at(counts, s);
    const double scale = divide_by_world ? static_cast<double>(ranks.size()) / world : 1.0;
    optimizer.zero_grad();
    for (int m = 0; m < micro; ++m) {
      std::vector<torch::Tensor> inputs;
      std::vector<torch::Tensor> targets;
      for (int r : ranks) {
        inputs.push_back(rank_chunk(local[r][s].input, m, micro));
        targets.push_back(rank_chunk(local[r][s].target, m, micro));
      }
      auto loss = torch::mse_loss(model->forward(torch::cat(inputs)), torch::cat(targets));
      if (micro > 1) loss = loss / micro;
      if (scale != 1.0) loss = loss * scale;
      loss.backward();
    }
    optimizer.step();
  }
  return snapshot_parameters(*model);
}

struct JoinRun {
  std::vector<Snapshot> parameters;  // per rank
  std::vector<JoinResult> results;   // per rank
  std::vector<DdpStats> stats;       // per rank
};

struct RunSpec {
  DdpOptions ddp;
  JoinOptions join;
  std::string backend = "gloo";
  int micro = 1;                 // micro-steps per step; all but the last under no_sync
  bool use_join = true;          // false: plain DDP (only for even inputs)
  bool finish_by_scope = false;  // leave the Join's scope instead of calling finish()
};

// Trains replicas[r] on local[r] with DDP under a Join; rank r runs counts[r] steps.
template <typename Holder>
JoinRun train_join(std::vector<Holder> replicas, const LocalBatches& local, const RunSpec& spec) {
  const int world = static_cast<int>(replicas.size());
  JoinRun run;
  run.parameters.resize(world);
  run.results.resize(world);
  run.stats.resize(world);
  gradwire::testing::run_ranks(
      world,
      [&](int rank, World& w) {
        auto& model = replicas[rank];
        DistributedDataParallel<typename Holder::ContainedType> ddp(model, w.communicator(),
                                                                    spec.ddp);
        auto optimizer = make_sgd(*model);
        auto micro_loss = [&](const Batch& batch, int m) {
          auto loss = torch::mse_loss(ddp(rank_chunk(batch.input, m, spec.micro)),
                                      rank_chunk(batch.target, m, spec.micro));
          return spec.micro > 1 ? loss / spec.micro : loss;
        };
        auto train = [&] {
          for (const auto& batch : local[rank]) {
            optimizer.zero_grad();
            {
              auto guard = ddp.no_sync();
              for (int m = 0; m + 1 < spec.micro; ++m) micro_loss(batch, m).backward();
            }
            micro_loss(batch, spec.micro - 1).backward();
            optimizer.step();
          }
        };
        if (spec.use_join && spec.finish_by_scope) {
          Join join(ddp, spec.join);
          train();
        } else if (spec.use_join) {
          Join join(ddp, spec.join);
          train();
          run.results[rank] = join.finish();
        } else {
          train();
        }
        run.parameters[rank] = snapshot_parameters(*model);
        run.stats[rank] = ddp.stats();
      },
      std::chrono::seconds(20), {}, spec.backend);
  return run;
}

// Every rank ends with the reference's parameters, and with the same parameters bit for bit
// (the final model is broadcast from the last rank to join).
void expect_join_matches(const JoinRun& run, const Snapshot& reference, Tolerance tol) {
  for (size_t r = 0; r < run.parameters.size(); ++r) {
    expect_close(run.parameters[r], reference, tol, "rank " + std::to_string(r));
    expect_close(run.parameters[r], run.parameters[0], Tolerance{0, 0},
                 "rank " + std::to_string(r) + " vs rank 0");
  }
}

struct UnevenCase {
  bool divide_by_initial_world_size;
  const char* backend;  // gloo divides on fill; shm averages in the reduction
};

class JoinUneven : public ::testing::TestWithParam<UnevenCase> {};

TEST_P(JoinUneven, ThreeFiveSevenBatchesMatchOneProcess) {
  torch::set_num_threads(1);
  const std::vector<int> counts = {3, 5, 7};
  const int world = 3;
  const bool divide_by_world = GetParam().divide_by_initial_world_size;
  auto local = make_local_batches(counts, 5, 3, 101);
  auto reference =
      train_reference_join(make_replicas(1, small_mlp)[0], local, counts, divide_by_world, 1);
  // The two divisor rules train differently: the comparison tells them apart.
  auto other_rule =
      train_reference_join(make_replicas(1, small_mlp)[0], local, counts, !divide_by_world, 1);
  EXPECT_FALSE(torch::allclose(reference.at("fc0.weight"), other_rule.at("fc0.weight")));

  RunSpec spec;
  spec.join.divide_by_initial_world_size = divide_by_world;
  spec.backend = GetParam().backend;
  auto run = train_join(make_replicas(world, small_mlp), local, spec);
  expect_join_matches(run, reference, kJoinTolerance);
  const std::vector<int64_t> shadowed = {4, 2, 0};  // 7 - 3, 7 - 5, 7 - 7
  for (int r = 0; r < world; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(run.results[r].shadowed_forwards, shadowed[r]);
    EXPECT_EQ(run.results[r].shadowed_backwards, shadowed[r]);
    EXPECT_EQ(run.results[r].final_model_root, 2);
    EXPECT_EQ(run.stats[r].iterations, counts[r]);  // shadowed iterations are not its own
  }
}

INSTANTIATE_TEST_SUITE_P(Divisors, JoinUneven,
                         ::testing::Values(UnevenCase{true, "gloo"}, UnevenCase{false, "gloo"},
                                           UnevenCase{true, "shm"}, UnevenCase{false, "shm"}),
                         [](const auto& info) {
                           return std::string(info.param.divide_by_initial_world_size
                                                  ? "world_size_"
                                                  : "training_") +
                                  info.param.backend;
                         });

// Even inputs: the Join changes nothing, bit for bit, and needs no final model.
TEST(Join, EvenInputsEqualPlainDdpBitForBit) {
  torch::set_num_threads(1);
  const std::vector<int> counts = {4, 4, 4};
  auto local = make_local_batches(counts, 5, 3, 103);
  RunSpec spec;
  spec.join.divide_by_initial_world_size = false;
  auto joined = train_join(make_replicas(3, small_mlp), local, spec);
  spec.use_join = false;
  auto plain = train_join(make_replicas(3, small_mlp), local, spec);
  for (int r = 0; r < 3; ++r) {
    expect_close(joined.parameters[r], plain.parameters[r], Tolerance{0, 0},
                 "rank " + std::to_string(r));
    EXPECT_EQ(joined.results[r].final_model_root, -1);
    EXPECT_EQ(joined.results[r].shadowed_forwards, 0);
  }
}

// Rank 0 decides the rebuilt bucket order, and here it never trains: the others rebuild from its
// layout, and it rebuilds with them, many buckets, under each reduction schedule.
TEST(Join, RankZeroWithoutBatchesLeadsTheRebuild) {
  torch::set_num_threads(1);
  const std::vector<int> counts = {0, 2, 3};
  auto local = make_local_batches(counts, 16, 4, 107);
  auto reference = train_reference_join(make_replicas(1, deep_mlp)[0], local, counts,
                                        /*divide_by_world=*/true, 1);
  for (auto schedule : {ReductionSchedule::kOverlapped, ReductionSchedule::kAfterBackwardSync}) {
    for (const char* backend : {"gloo", "shm"}) {
      SCOPED_TRACE(std::string(to_string(schedule)) + " " + backend);
      RunSpec spec;
      spec.ddp.bucket_cap_mb = 0.001;
      spec.ddp.first_bucket_mb = 0.001;
      spec.ddp.schedule = schedule;
      spec.backend = backend;
      auto run = train_join(make_replicas(3, deep_mlp), local, spec);
      expect_join_matches(run, reference, kJoinTolerance);
      for (int r = 0; r < 3; ++r) {
        SCOPED_TRACE("rank " + std::to_string(r));
        EXPECT_GT(run.stats[r].buckets.size(), 3u);
        EXPECT_TRUE(run.stats[r].buckets_rebuilt);
        ASSERT_EQ(run.stats[r].buckets.size(), run.stats[0].buckets.size());
        for (size_t b = 0; b < run.stats[r].buckets.size(); ++b) {
          EXPECT_EQ(run.stats[r].buckets[b].parameters, run.stats[0].buckets[b].parameters);
        }
      }
      EXPECT_EQ(run.results[0].shadowed_backwards, 3);
    }
  }
}

// Gradient accumulation: 2 of 3 micro-steps under no_sync. Without buffers those forwards do not
// communicate and a joined rank sees only the synchronised ones; with buffers it shadows each
// forward's broadcast, and only the synchronised backwards.
TEST(Join, NoSyncAccumulationMatchesOneProcess) {
  torch::set_num_threads(1);
  const std::vector<int> counts = {1, 2, 3};
  const int micro = 3;
  auto local = make_local_batches(counts, 5, 3, 109);
  for (bool divide_by_world : {true, false}) {
    SCOPED_TRACE(divide_by_world ? "divided by the world size" : "divided by ranks training");
    RunSpec spec;
    spec.micro = micro;
    spec.join.divide_by_initial_world_size = divide_by_world;
    {
      auto reference = train_reference_join(make_replicas(1, small_mlp)[0], local, counts,
                                            divide_by_world, micro);
      auto run = train_join(make_replicas(3, small_mlp), local, spec);
      expect_join_matches(run, reference, kJoinTolerance);
      EXPECT_EQ(run.results[0].shadowed_forwards, 2);
      EXPECT_EQ(run.results[0].shadowed_backwards, 2);
      EXPECT_EQ(run.results[1].shadowed_backwards, 1);
    }
    {
      auto factory = [] { return BufferedMlp(); };
      auto reference =
          train_reference_join(make_replicas(1, factory)[0], local, counts, divide_by_world, micro);
      auto run = train_join(make_replicas(3, factory), local, spec);
      expect_join_matches(run, reference, kJoinTolerance);
      EXPECT_EQ(run.results[0].shadowed_forwards, 2 * micro);
      EXPECT_EQ(run.results[0].shadowed_backwards, 2);
      EXPECT_EQ(run.results[1].shadowed_forwards, micro);
    }
  }
}

class JoinHooks : public ::testing::TestWithParam<std::string> {};

// The joined rank's zeros go through the same compression hook (and, on shm, the same shared
// wire buffers, allocated collectively per bucket).
TEST_P(JoinHooks, CompressedHookMatchesWithinRounding) {
  torch::set_num_threads(1);
  const std::vector<int> counts = {3, 5, 7};
  auto local = make_local_batches(counts, 16, 4, 113);
  for (bool divide_by_world : {true, false}) {
    auto reference =
        train_reference_join(make_replicas(1, deep_mlp)[0], local, counts, divide_by_world, 1);
    for (const char* backend : {"gloo", "shm"}) {
      SCOPED_TRACE(std::string(backend) + (divide_by_world ? " world size" : " training"));
      RunSpec spec;
      spec.ddp.bucket_cap_mb = 0.001;
      spec.ddp.first_bucket_mb = 0.001;
      spec.ddp.comm_hook = make_comm_hook(GetParam());
      spec.join.divide_by_initial_world_size = divide_by_world;
      spec.backend = backend;
      auto run = train_join(make_replicas(3, deep_mlp), local, spec);
      expect_join_matches(run, reference, kCompressedTolerance);
      EXPECT_EQ(run.stats[2].comm_hook, GetParam());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Hooks, JoinHooks, ::testing::Values("fp16", "bf16"),
                         [](const auto& info) { return info.param; });

// find_unused_parameters (the used map is exchanged, a joined rank using nothing) and
// static_graph (unused found in the first iteration, then a rebuild).
TEST(Join, UnusedParametersMatchOneProcess) {
  torch::set_num_threads(1);
  const std::vector<int> counts = {0, 2, 4};
  auto local = make_local_batches(counts, 8, 4, 127);
  auto factory = [] { return UnusedBranch(); };
  for (bool static_graph : {false, true}) {
    SCOPED_TRACE(static_graph ? "static_graph" : "find_unused_parameters");
    auto reference =
        train_reference_join(make_replicas(1, factory)[0], local, counts, /*divide*/ false, 1);
    RunSpec spec;
    spec.ddp.find_unused_parameters = !static_graph;
    spec.ddp.static_graph = static_graph;
    spec.join.divide_by_initial_world_size = false;
    auto run = train_join(make_replicas(3, factory), local, spec);
    expect_join_matches(run, reference, kJoinTolerance);
    EXPECT_EQ(run.stats[2].buckets_rebuilt, static_graph);
    EXPECT_EQ(run.stats[0].buckets_rebuilt, static_graph);
  }
}

// Ranks without a single batch: nothing hangs (a hang would end in the 20 s timeout's
// TimeoutError, which fails the test), and no final model is needed when nobody trained.
TEST(Join, RanksWithoutBatchesDoNotHang) {
  torch::set_num_threads(1);
  {
    const std::vector<int> counts = {0, 3, 0};
    auto local = make_local_batches(counts, 5, 3, 131);
    auto reference = train_reference_join(make_replicas(1, small_mlp)[0], local, counts, true, 1);
    auto run = train_join(make_replicas(3, small_mlp), local, RunSpec{});
    expect_join_matches(run, reference, kJoinTolerance);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(run.results[r].final_model_root, 1);
    RunSpec by_scope;  // the destructor finishes the Join
    by_scope.finish_by_scope = true;
    auto scoped = train_join(make_replicas(3, small_mlp), local, by_scope);
    expect_join_matches(scoped, reference, kJoinTolerance);
  }
  {
    const std::vector<int> counts = {0, 0, 0};
    auto local = make_local_batches(counts, 5, 3, 137);
    auto run = train_join(make_replicas(3, small_mlp), local, RunSpec{});
    auto initial = snapshot_parameters(*make_replicas(1, small_mlp)[0]);
    expect_join_matches(run, initial, Tolerance{0, 0});
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(run.results[r].final_model_root, -1);
      EXPECT_EQ(run.results[r].shadowed_forwards, 0);
    }
  }
}

TEST(Join, SecondJoinOnTheSameDdpIsRefused) {
  torch::set_num_threads(1);
  gradwire::testing::run_ranks(1, [](int, World& w) {
    auto model = small_mlp();
    DistributedDataParallel<MlpImpl> ddp(model, w.communicator());
    Join join(ddp);
    EXPECT_THROW(Join second(ddp), InvalidArgument);
    EXPECT_EQ(join.finish().shadowed_forwards, 0);
    Join again(ddp);  // the first one detached
    EXPECT_EQ(again.finish().final_model_root, -1);
  });
}

// The round's pure parts.
TEST(JoinRound, SumOfContributionsNamesTrainingRanksAndRoot) {
  const int world = 4;
  at::Tensor sum = join_contribution(0, world, /*training=*/false, false);
  sum += join_contribution(1, world, true, true);
  sum += join_contribution(2, world, false, false);
  sum += join_contribution(3, world, true, true);
  JoinRound round = read_join_round(sum);
  EXPECT_EQ(round.training, (std::vector<int>{1, 3}));
  EXPECT_TRUE(round.synchronising);
  EXPECT_EQ(round.root(), 1);
  EXPECT_FALSE(round.all_joined());

  at::Tensor none = join_contribution(0, 2, false, false) + join_contribution(1, 2, false, false);
  EXPECT_TRUE(read_join_round(none).all_joined());
  EXPECT_FALSE(read_join_round(none).synchronising);
}

TEST(JoinRound, RanksDisagreeingAboutNoSyncAreRefused) {
  at::Tensor sum = join_contribution(0, 3, true, true) + join_contribution(1, 3, true, false) +
                   join_contribution(2, 3, false, false);
  try {
    read_join_round(sum);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("1 of the 2 ranks still training"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("no_sync()"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace join_test
}  // namespace gradwire::ddp::testing
