#include "cases/reducers_settings.h"

#include <gtest/gtest.h>

#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

using ddp::ReductionSchedule;

TEST(ReducersSettingsTest, DefaultPresetIsCompareDdps) {
  const ReducersSettings settings = resolve_reducers_settings({});
  EXPECT_EQ(settings.model, "resnet50");
  EXPECT_EQ(settings.batch_size, 32);
  EXPECT_EQ(settings.image_size, 224);
  ASSERT_EQ(settings.bucket_sizes_mb.size(), 25u);
  EXPECT_DOUBLE_EQ(settings.bucket_sizes_mb.front(), 3);
  EXPECT_DOUBLE_EQ(settings.bucket_sizes_mb.back(), 27);
  EXPECT_EQ(settings.reducers,
            (std::vector<ReductionSchedule>{ReductionSchedule::kOverlapped,
                                            ReductionSchedule::kAfterBackward,
                                            ReductionSchedule::kAfterBackwardSync}));
  EXPECT_EQ(settings.warmup, 20);
  EXPECT_EQ(settings.iterations, 100);
}

TEST(ReducersSettingsTest, QuickPresetAndOverrides) {
  ReducersFlags flags;
  flags.preset = "quick";
  ReducersSettings settings = resolve_reducers_settings(flags);
  EXPECT_EQ(settings.model, "resnet18");
  EXPECT_EQ(settings.batch_size, 8);
  EXPECT_EQ(settings.bucket_sizes_mb, (std::vector<double>{1, 5, 25}));

  flags.model = "mlp";
  flags.bucket_sizes = "0.5,2..4";
  flags.reducers = {"sync", "overlapped"};
  flags.iterations = 3;
  flags.warmup = 0;
  flags.json_path = "out.json";
  settings = resolve_reducers_settings(flags);
  EXPECT_EQ(settings.model, "mlp");
  EXPECT_EQ(settings.bucket_sizes_mb, (std::vector<double>{0.5, 2, 3, 4}));
  EXPECT_EQ(settings.reducers,
            (std::vector<ReductionSchedule>{ReductionSchedule::kAfterBackwardSync,
                                            ReductionSchedule::kOverlapped}));
  EXPECT_EQ(settings.iterations, 3);
  EXPECT_EQ(settings.warmup, 0);
  EXPECT_EQ(settings.json_path, "out.json");
}

TEST(ReducersSettingsTest, BucketSizeLists) {
  EXPECT_EQ(parse_bucket_sizes("25"), (std::vector<double>{25}));
  EXPECT_EQ(parse_bucket_sizes("3..5"), (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(parse_bucket_sizes("1,2.5,10..11"), (std::vector<double>{1, 2.5, 10, 11}));
  EXPECT_EQ(parse_bucket_sizes("7..7"), (std::vector<double>{7}));
  for (const char* bad :
       {"", "0", "-1", "x", "3..", "..3", "5..3", "1,,2", "2,2", "1..3,2", "1e999", "3 MiB"}) {
    EXPECT_THROW(parse_bucket_sizes(bad), InvalidArgument) << bad;
  }
  try {
    parse_bucket_sizes("5..3");
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("runs backwards"), std::string::npos) << e.what();
  }
}

TEST(ReducersSettingsTest, ReducerNames) {
  EXPECT_EQ(parse_reducer("overlapped"), ReductionSchedule::kOverlapped);
  EXPECT_EQ(parse_reducer("async"), ReductionSchedule::kAfterBackward);
  EXPECT_EQ(parse_reducer("sync"), ReductionSchedule::kAfterBackwardSync);
  try {
    parse_reducer("eager");
    FAIL() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("overlapped, async, sync"), std::string::npos) << e.what();
  }
}

TEST(ReducersSettingsTest, BadSettingsAreRefused) {
  ReducersFlags flags;
  flags.preset = "slow";
  EXPECT_THROW(resolve_reducers_settings(flags), InvalidArgument);
  flags = {};
  flags.model = "resnet9000";
  EXPECT_THROW(resolve_reducers_settings(flags), InvalidArgument);
  flags = {};
  flags.reducers = {"sync", "sync"};
  EXPECT_THROW(resolve_reducers_settings(flags), InvalidArgument);
  flags = {};
  flags.iterations = 0;
  EXPECT_THROW(resolve_reducers_settings(flags), InvalidArgument);
  flags = {};
  flags.warmup = -1;
  EXPECT_THROW(resolve_reducers_settings(flags), InvalidArgument);
}

TEST(ReducersSettingsTest, Description) {
  ReducersFlags flags;
  flags.preset = "quick";
  const std::string text = describe_reducers_settings(resolve_reducers_settings(flags), 2, 1);
  EXPECT_EQ(text,
            "preset quick: model resnet18, batch 8 per rank, images 64x64, buckets 1,5,25 MiB, "
            "reducers overlapped,async,sync, 3 warm-up + 20 timed iterations, 2 ranks, 1 thread "
            "per rank");
}

}  // namespace
}  // namespace gradwire::bench
