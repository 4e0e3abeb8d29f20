// gradwire-bench hybrid: flags -> settings (defaults of PyTorch's DDP + RPC benchmark, the quick
// preset, jobs) and the batches (ranges, determinism, the stream shared with hybrid_reference.py).
#include "cases/hybrid_settings.h"

#include <gtest/gtest.h>

#include <set>

#include "cases/hybrid_batches.h"
#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

TEST(HybridSettings, DefaultsArePyTorchDdpRpcBenchmarks) {
  const HybridSettings s = resolve_hybrid_settings({}, std::nullopt);
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
}

TEST(HybridSettings, QuickPresetAndFlagsOverride) {
  HybridFlags flags;
  flags.preset = "quick";
  HybridSettings s = resolve_hybrid_settings(flags, std::nullopt);
  EXPECT_EQ(s.trainers, 2);
  EXPECT_EQ(s.servers, 8);
  EXPECT_EQ(s.epochs, 20);
  EXPECT_EQ(s.warmup, 2);
  flags.trainers = 3;
  flags.servers = 2;
  flags.dim = 16;
  flags.epochs = 4;
  flags.warmup = 0;
  flags.seed = 7;
  flags.mode = "sync";
  flags.reference = "pytorch";
  flags.repeat = 3;
  s = resolve_hybrid_settings(flags, std::nullopt);
  EXPECT_EQ(s.trainers, 3);
  EXPECT_EQ(s.servers, 2);
  EXPECT_EQ(s.embedding_width(), 32);
  EXPECT_EQ(s.epochs, 4);
  EXPECT_EQ(s.warmup, 0);
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.mode, HybridMode::kSync);
  EXPECT_TRUE(s.reference_pytorch);
  EXPECT_EQ(s.repeat, 3);
  EXPECT_NE(describe_hybrid_settings(s).find("3 trainers x 2 servers"), std::string::npos);
}

TEST(HybridSettings, RejectsBadValues) {
  HybridFlags flags;
  flags.preset = "huge";
  EXPECT_THROW(resolve_hybrid_settings(flags, std::nullopt), InvalidArgument);
  flags = {};
  flags.mode = "eventually";
  EXPECT_THROW(resolve_hybrid_settings(flags, std::nullopt), InvalidArgument);
  flags = {};
  flags.backend = "mpi";
  EXPECT_THROW(resolve_hybrid_settings(flags, std::nullopt), InvalidArgument);
  flags = {};
  flags.backend = "shm";
  EXPECT_EQ(resolve_hybrid_settings(flags, std::nullopt).backend, "shm");
  flags.backend = "gloo";
  EXPECT_EQ(resolve_hybrid_settings(flags, std::nullopt).backend, "gloo");
  flags.backend = "auto";  // inside a job the library decides by the job's hosts
  EXPECT_EQ(resolve_hybrid_settings(flags, HybridJob{2, 2}).backend, "auto");
  flags = {};
  flags.reference = "tensorflow";
  EXPECT_THROW(resolve_hybrid_settings(flags, std::nullopt), InvalidArgument);
  flags = {};
  flags.trainers = 0;
  EXPECT_THROW(resolve_hybrid_settings(flags, std::nullopt), InvalidArgument);
  flags = {};
  flags.warmup = -1;
  EXPECT_THROW(resolve_hybrid_settings(flags, std::nullopt), InvalidArgument);
}

TEST(HybridSettings, AJobDecidesTheCounts) {
  HybridSettings s = resolve_hybrid_settings({}, HybridJob{4, 3});
  EXPECT_EQ(s.trainers, 4);
  EXPECT_EQ(s.servers, 3);
  HybridFlags flags;
  flags.servers = 2;
  EXPECT_THROW(resolve_hybrid_settings(flags, HybridJob{4, 3}), InvalidArgument);
  flags = {};
  flags.reference = "pytorch";
  EXPECT_THROW(resolve_hybrid_settings(flags, HybridJob{4, 3}), InvalidArgument);
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
