#include "cases/collectives_settings.h"

#include <gtest/gtest.h>

#include "cases/collective_ops.h"
#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

CollectivesSettings resolve(const std::string& flags) {
  return resolve_collectives_settings(collectives_options().parse(flags));
}

TEST(CollectivesSettingsTest, DefaultPresetCovers8BytesTo256MiB) {
  const CollectivesSettings settings = resolve("");
  ASSERT_EQ(settings.sizes.size(), 26u);
  EXPECT_EQ(settings.sizes.front(), 8u);
  EXPECT_EQ(settings.sizes.back(), std::uint64_t{256} << 20);
  EXPECT_EQ(settings.policy.iters, 50);
  EXPECT_EQ(settings.ops,
            (std::vector<std::string>{"allreduce", "broadcast", "allgather", "reduce_scatter"}));
  EXPECT_EQ(settings.backends, std::vector<std::string>{"gloo"});
  EXPECT_EQ(settings.buffers, std::vector<std::string>{"ordinary"});
}

TEST(CollectivesSettingsTest, QuickPresetIsSmallerAndFlagsOverrideIt) {
  const CollectivesSettings quick = resolve("--preset quick");
  EXPECT_EQ(quick.sizes.back(), std::uint64_t{16} << 20);
  EXPECT_LT(quick.policy.bytes_per_size, resolve("").policy.bytes_per_size);
  EXPECT_LT(quick.policy.min_warmup_seconds, resolve("").policy.min_warmup_seconds);

  const CollectivesSettings settings = resolve(
      "--preset quick -e 4K -n 2 -w 0 --ops allgather,allreduce --backend shm,gloo --buffers "
      "shared,ordinary");
  EXPECT_EQ(settings.sizes.back(), 4096u);
  EXPECT_EQ(settings.policy.iters, 2);
  EXPECT_EQ(settings.policy.warmup, 0);
  EXPECT_EQ(settings.policy.min_iters, 2);  // lowered to --iters
  EXPECT_EQ(settings.ops, (std::vector<std::string>{"allreduce", "allgather"}));  // table order
  EXPECT_EQ(settings.backends, (std::vector<std::string>{"shm", "gloo"}));        // as given
  EXPECT_EQ(settings.buffers, (std::vector<std::string>{"shared", "ordinary"}));
  EXPECT_EQ(join_backends(settings.backends), "shm,gloo");
}

TEST(CollectivesSettingsTest, CudaDeviceTakesNcclOnly) {
  EXPECT_EQ(resolve("").device, "cpu");
  const CollectivesSettings cuda = resolve("--device cuda");
  EXPECT_EQ(cuda.device, "cuda");
  EXPECT_EQ(cuda.backends, std::vector<std::string>{"nccl"});
  EXPECT_EQ(resolve("--device cuda --backend nccl").backends, std::vector<std::string>{"nccl"});
  EXPECT_THROW(resolve("--device cuda --backend gloo"), InvalidArgument);
  EXPECT_THROW(resolve("--device cuda --buffers shared"), InvalidArgument);
  EXPECT_THROW(resolve("--device gpu"), CLI::ValidationError);  // CLI11 names the choices
}

TEST(CollectivesSettingsTest, RejectsBadInput) {
  EXPECT_THROW(resolve("-b 1M -e 1K"), InvalidArgument);
  EXPECT_THROW(resolve("-b lots"), InvalidArgument);
  EXPECT_THROW(  // given, and not a size
      resolve_collectives_settings(collectives_options().parse(std::vector<std::string>{"-e", ""})),
      InvalidArgument);
  EXPECT_THROW(resolve("--backend shm,shm"), InvalidArgument);
  EXPECT_THROW(resolve("--ops alltoall"), CLI::ValidationError);
  EXPECT_THROW(resolve("--backend gloo,shmem"), CLI::ValidationError);
  EXPECT_THROW(resolve("--buffers registered"), CLI::ValidationError);
}

TEST(CollectiveOpsTest, SizesFollowNcclTests) {
  const auto& ops = collective_ops();
  ASSERT_EQ(ops.size(), 4u);
  const CollectiveOp& allreduce = ops[0];
  const CollectiveOp& allgather = ops[2];
  const CollectiveOp& reduce_scatter = ops[3];
  EXPECT_EQ(allreduce.input_count(4096, 4), 1024);
  EXPECT_EQ(allreduce.reported_bytes(1024, 4), 4096u);
  // allgather: the size is the whole gathered output.
  EXPECT_EQ(allgather.input_count(4096, 4), 256);
  EXPECT_EQ(allgather.reported_bytes(256, 4), 4096u);
  EXPECT_EQ(allgather.input_count(8, 4), 1);  // at least one element each
  EXPECT_EQ(allgather.reported_bytes(1, 4), 16u);
  // reduce_scatter: the size is each rank's whole input, a whole number of floats per rank.
  EXPECT_EQ(reduce_scatter.input_count(4096, 4), 1024);
  EXPECT_EQ(reduce_scatter.reported_bytes(1024, 4), 4096u);
  EXPECT_EQ(reduce_scatter.input_count(8, 4), 4);
  EXPECT_EQ(reduce_scatter.input_count(4100, 4), 1024);
}

TEST(CollectiveOpsTest, RankValuesDifferPerRankAndAreExact) {
  EXPECT_NE(rank_value(0, 5), rank_value(1, 5));
  EXPECT_EQ(rank_value(1, 1021 + 3), rank_value(1, 3));
  EXPECT_EQ(rank_value(0, 0), 1.0f);
}

TEST(CollectivesSettingsTest, OnlyInPlaceOpsTakeSharedBuffers) {
  for (const auto& op : collective_ops()) {
    EXPECT_EQ(op.in_place, op.name == "allreduce" || op.name == "broadcast") << op.name;
  }
}

}  // namespace
}  // namespace gradwire::bench
