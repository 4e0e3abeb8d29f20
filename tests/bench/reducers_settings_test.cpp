#include "cases/reducers_settings.h"

#include <gtest/gtest.h>

#include "bench_process.h"
#include "gradwire/common/error.h"

namespace gradwire::bench {
// A namespace of its own: in the unity build its helpers meet other files'.
namespace reducers_settings_test {
namespace {

using ddp::ReductionSchedule;

ReducersSettings resolve(const std::string& flags) {
  return reducers_options().parse(flags).resolve();
}

TEST(ReducersSettingsTest, DefaultPresetIsCompareDdps) {
  const ReducersSettings settings = resolve("");
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
  // An empty --model or --bucket-sizes is the preset's.
  const std::vector<std::string> empty = {"--model", "", "--bucket-sizes", ""};
  EXPECT_EQ(reducers_options().parse(empty).resolve().bucket_sizes_mb.size(), 25u);
}

TEST(ReducersSettingsTest, QuickPresetAndOverrides) {
  ReducersSettings settings = resolve("--preset quick");
  EXPECT_EQ(settings.model, "resnet18");
  EXPECT_EQ(settings.batch_size, 8);
  EXPECT_EQ(settings.bucket_sizes_mb, (std::vector<double>{1, 5, 25}));
  EXPECT_EQ(describe_reducers_settings(settings, 2, 1),
            "preset quick: model resnet18, batch 8 per rank, images 64x64, buckets 1,5,25 MiB, "
            "reducers overlapped,async,sync, 3 warm-up + 20 timed iterations, 2 ranks, 1 thread "
            "per rank");

  settings = resolve(
      "--preset quick --model mlp --bucket-sizes 0.5,2..4 --reducers sync,overlapped --iterations "
      "3 --warmup 0 --json out.json");
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

TEST(ReducersSettingsTest, BadSettingsAreRefusedInTableOrder) {
  const auto message_of = [](const std::string& flags) {
    return testing::invalid_argument_message([&] { resolve(flags); });
  };
  EXPECT_EQ(message_of("--reducers eager"), "unknown reducer 'eager': use overlapped, async, sync");
  EXPECT_EQ(message_of("--reducers sync,sync"), "reducer 'sync' is listed twice");
  EXPECT_NE(message_of("--model resnet9000 --reducers eager").find("unknown model"),
            std::string::npos);
  EXPECT_NE(message_of("--model resnet9000 --bucket-sizes x").find("bucket sizes"),
            std::string::npos);
  EXPECT_THROW(resolve("--iterations 0"), CLI::ValidationError);
}

}  // namespace
}  // namespace reducers_settings_test
}  // namespace gradwire::bench
