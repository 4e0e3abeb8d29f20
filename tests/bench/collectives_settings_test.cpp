#include "cases/collectives_settings.h"

#include <gtest/gtest.h>

#include "cases/collective_ops.h"
#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

TEST(CollectivesSettingsTest, DefaultPresetCovers8BytesTo256MiB) {
  const CollectivesSettings settings = resolve_collectives_settings({});
  ASSERT_EQ(settings.sizes.size(), 26u);
  EXPECT_EQ(settings.sizes.front(), 8u);
  EXPECT_EQ(settings.sizes.back(), std::uint64_t{256} << 20);
  EXPECT_EQ(settings.policy.iters, 50);
  EXPECT_EQ(settings.ops,
            (std::vector<std::string>{"allreduce", "broadcast", "allgather", "reduce_scatter"}));
}

TEST(CollectivesSettingsTest, FlagsOverrideThePreset) {
  CollectivesFlags flags;
  flags.preset = "quick";
  flags.max_bytes = "4K";
  flags.iters = 2;
  flags.warmup = 0;
  flags.ops = {"allgather", "allreduce"};
  const CollectivesSettings settings = resolve_collectives_settings(flags);
  EXPECT_EQ(settings.sizes.back(), 4096u);
  EXPECT_EQ(settings.policy.iters, 2);
  EXPECT_EQ(settings.policy.warmup, 0);
  EXPECT_EQ(settings.policy.min_iters, 2);  // lowered to --iters
  EXPECT_EQ(settings.ops, (std::vector<std::string>{"allreduce", "allgather"}));  // table order
}

TEST(CollectivesSettingsTest, QuickPresetIsSmaller) {
  CollectivesFlags flags;
  flags.preset = "quick";
  const CollectivesSettings settings = resolve_collectives_settings(flags);
  EXPECT_EQ(settings.sizes.back(), std::uint64_t{16} << 20);
  EXPECT_LT(settings.policy.bytes_per_size, resolve_collectives_settings({}).policy.bytes_per_size);
}

TEST(CollectivesSettingsTest, RejectsBadInput) {
  CollectivesFlags flags;
  flags.preset = "huge";
  EXPECT_THROW(resolve_collectives_settings(flags), InvalidArgument);
  flags = {};
  flags.min_bytes = "1M";
  flags.max_bytes = "1K";
  EXPECT_THROW(resolve_collectives_settings(flags), InvalidArgument);
  flags = {};
  flags.ops = {"alltoall"};
  EXPECT_THROW(resolve_collectives_settings(flags), InvalidArgument);
  flags = {};
  flags.iters = 0;
  EXPECT_THROW(resolve_collectives_settings(flags), InvalidArgument);
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

TEST(CollectivesSettingsTest, BackendListKeepsOrderAndDefaultsToGloo) {
  EXPECT_EQ(resolve_collectives_settings({}).backends, std::vector<std::string>{"gloo"});
  CollectivesFlags flags;
  flags.backends = {"shm", "gloo"};
  EXPECT_EQ(resolve_collectives_settings(flags).backends,
            (std::vector<std::string>{"shm", "gloo"}));
  EXPECT_EQ(join_backends({"gloo", "shm"}), "gloo,shm");
}

TEST(CollectivesSettingsTest, UnknownOrRepeatedBackendIsRefused) {
  CollectivesFlags flags;
  flags.backends = {"gloo", "shmem"};
  EXPECT_THROW(resolve_collectives_settings(flags), InvalidArgument);
  flags.backends = {"shm", "shm"};
  EXPECT_THROW(resolve_collectives_settings(flags), InvalidArgument);
}

TEST(CollectivesSettingsTest, BufferKindsDefaultToOrdinaryAndUnknownOnesAreRefused) {
  EXPECT_EQ(resolve_collectives_settings({}).buffers, std::vector<std::string>{"ordinary"});
  CollectivesFlags flags;
  flags.buffers = {"shared", "ordinary"};
  EXPECT_EQ(resolve_collectives_settings(flags).buffers,
            (std::vector<std::string>{"shared", "ordinary"}));
  flags.buffers = {"registered"};
  EXPECT_THROW(resolve_collectives_settings(flags), InvalidArgument);
}

TEST(CollectivesSettingsTest, OnlyInPlaceOpsTakeSharedBuffers) {
  for (const auto& op : collective_ops()) {
    EXPECT_EQ(op.in_place, op.name == "allreduce" || op.name == "broadcast") << op.name;
  }
}

}  // namespace
}  // namespace gradwire::bench
