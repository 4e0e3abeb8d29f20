// gradwire-bench hybrid: flags -> settings (defaults of PyTorch's DDP + RPC benchmark, the quick
// preset, jobs) and the batches (ranges, determinism, the stream shared with hybrid_reference.py).
#include "cases/hybrid_settings.h"

#include <gtest/gtest.h>

#include <set>

#include "cases/hybrid_batches.h"
#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

HybridSettings resolve(const std::string& flags, std::optional<HybridJob> job = std::nullopt) {
  return resolve_hybrid_settings(hybrid_options().parse(flags), job);
}

TEST(HybridSettings, DefaultsArePyTorchDdpRpcBenchmarks) {
  const HybridSettings s = resolve("");
  EXPECT_EQ(s.trainers, 8);
  EXPECT_EQ(s.servers, 8);
  EXPECT_EQ(s.rows, 300);
  EXPECT_EQ(s.dim, 64);
  EXPECT_EQ(s.embedding_width(), 512);
  EXPECT_EQ(s.warmup, 5);
  EXPECT_EQ(s.epochs, 100);
  EXPECT_EQ(s.batches, 10);
  EXPECT_EQ(s.mode, HybridMode::kAsync);
  EXPECT_FALSE(s.reference_pytorch);
  EXPECT_EQ(s.repeat, 1);
  EXPECT_EQ(s.backend, "shm");     // "auto" with trainers started here, all on one host
  EXPECT_EQ(s.server_threads, 1);  // one thread per process, as PyTorch's DDP + RPC benchmark
  EXPECT_FALSE(s.defer_pushes);
}

TEST(HybridSettings, QuickPresetAndFlagsOverride) {
  HybridSettings s = resolve("--preset quick");
  EXPECT_EQ(s.trainers, 2);
  EXPECT_EQ(s.servers, 8);
  EXPECT_EQ(s.epochs, 20);
  EXPECT_EQ(s.warmup, 2);
  s = resolve(
      "--preset quick --trainers 3 --servers 2 --dim 16 --epochs 4 --warmup 0 --seed 7 --mode sync "
      "--reference pytorch --repeat 3 --backend gloo --defer-pushes");
  EXPECT_EQ(s.trainers, 3);
  EXPECT_EQ(s.servers, 2);
  EXPECT_EQ(s.embedding_width(), 32);
  EXPECT_EQ(s.epochs, 4);
  EXPECT_EQ(s.warmup, 0);
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.mode, HybridMode::kSync);
  EXPECT_TRUE(s.reference_pytorch);
  EXPECT_EQ(s.repeat, 3);
  EXPECT_EQ(s.backend, "gloo");
  EXPECT_TRUE(s.defer_pushes);
  EXPECT_EQ(describe_hybrid_settings(s),
            "preset quick: 3 trainers x 2 servers, 300 rows x 16 per server (32 wide), 0 warm-up "
            "+ 4 epochs of 10 batches, seed 7, sync updates, gloo allreduce, reference pytorch, "
            "deferred pushes, 3 repeats");
  EXPECT_THROW(resolve("--mode eventually"), CLI::ValidationError);
  EXPECT_THROW(resolve("--backend mpi"), CLI::ValidationError);
}

TEST(HybridSettings, AJobDecidesTheCounts) {
  HybridSettings s = resolve("", HybridJob{4, 3});
  EXPECT_EQ(s.trainers, 4);
  EXPECT_EQ(s.servers, 3);
  EXPECT_EQ(s.backend, "auto");  // inside a job the library decides by the job's hosts
  EXPECT_EQ(resolve("--servers 3", HybridJob{4, 3}).servers, 3);
  EXPECT_THROW(resolve("--servers 2", HybridJob{4, 3}), InvalidArgument);
  EXPECT_THROW(resolve("--trainers 8", HybridJob{4, 3}), InvalidArgument);
  EXPECT_THROW(resolve("--reference pytorch", HybridJob{4, 3}), InvalidArgument);
  EXPECT_THROW(resolve("--repeat 2", HybridJob{4, 3}), InvalidArgument);
}

TEST(HybridBatches, SplitMix64Stream) {
  // SplitMix64 from state 0: the published first outputs.
  HybridBatchGenerator generator(0, 0, 300);
  EXPECT_EQ(generator.next(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(generator.next(), 0x6E789E6AA1B965F4ull);
}

TEST(HybridBatches, SizesAndValuesInRange) {
  HybridBatchGenerator generator(3, 1, 300);
  std::set<std::int64_t> id_counts;
  for (int i = 0; i < 500; ++i) {
    const HybridBatch batch = generator.next_batch();
    const auto ids = static_cast<std::int64_t>(batch.ids.size());
    ASSERT_GE(ids, kHybridMinIds);
    ASSERT_LE(ids, kHybridMaxIds);
    id_counts.insert(ids);
    for (const auto id : batch.ids) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, 300);
    }
    ASSERT_FALSE(batch.offsets.empty());
    EXPECT_EQ(batch.offsets.front(), 0);
    for (std::size_t j = 1; j < batch.offsets.size(); ++j) {
      const auto step = batch.offsets[j] - batch.offsets[j - 1];
      ASSERT_GE(step, 1);
      ASSERT_LE(step, kHybridMaxBag);
    }
    ASSERT_LT(batch.offsets.back(), ids);
    ASSERT_EQ(batch.targets.size(), batch.offsets.size());
    for (const auto target : batch.targets) {
      ASSERT_GE(target, 0);
      ASSERT_LT(target, kHybridClasses);
    }
  }
  EXPECT_GT(id_counts.size(), 20u);  // the whole range is used
}

TEST(HybridBatches, DeterministicBySeedAndTrainer) {
  auto epoch = [](std::uint64_t seed, int trainer) {
    return HybridBatchGenerator(seed, trainer, 300).next_epoch(10);
  };
  const auto a = epoch(5, 0);
  const auto b = epoch(5, 0);
  ASSERT_EQ(a.size(), 10u);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].ids, b[i].ids);
    EXPECT_EQ(a[i].offsets, b[i].offsets);
    EXPECT_EQ(a[i].targets, b[i].targets);
  }
  EXPECT_NE(epoch(5, 1)[0].ids, a[0].ids);
  EXPECT_NE(epoch(6, 0)[0].ids, a[0].ids);
}

}  // namespace
}  // namespace gradwire::bench
