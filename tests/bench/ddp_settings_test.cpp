#include "cases/ddp_settings.h"

#include <gtest/gtest.h>

#include "cases/ddp_reference.h"
#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

DdpSettings resolve(const std::string& flags, std::optional<int> job_world_size = std::nullopt) {
  return resolve_ddp_settings(ddp_options().parse(flags), job_world_size);
}

TEST(DdpSettingsTest, DefaultPresetIsUpstreams) {
  const DdpSettings settings = resolve("");
  EXPECT_EQ(settings.models, (std::vector<std::string>{"resnet50", "resnet101", "resnext50_32x4d",
                                                       "resnext101_32x8d"}));
  EXPECT_EQ(settings.batch_size, 32);
  EXPECT_EQ(settings.image_size, 224);
  EXPECT_DOUBLE_EQ(settings.bucket_cap_mb, 25);
  EXPECT_EQ(settings.warmup, 5);
  EXPECT_EQ(settings.iterations, 10);
  EXPECT_EQ(settings.world_sizes, (std::vector<int>{1, 2}));
  EXPECT_EQ(settings.ranks, 2);
  EXPECT_FALSE(settings.reference_pytorch);
  EXPECT_EQ(settings.repeat, 1);
  EXPECT_TRUE(settings.shared_buckets);
  EXPECT_EQ(settings.backends, std::vector<std::string>{"gloo"});
  EXPECT_EQ(settings.comm_hooks, std::vector<std::string>{"allreduce"});
}

TEST(DdpSettingsTest, QuickPresetAndOverrides) {
  DdpSettings settings = resolve("--preset quick");
  EXPECT_EQ(settings.models, (std::vector<std::string>{"resnet18", "cnn"}));
  EXPECT_EQ(settings.batch_size, 8);
  EXPECT_EQ(settings.image_size, 64);
  EXPECT_EQ(settings.iterations, 40);

  settings = resolve(
      "--preset quick --model mlp,cnn --model mlp --batch-size 4 --iterations 3 --warmup 0 "
      "--world-sizes 4,1,2,2 --reference pytorch --no-shared-buckets --repeat 3 --backend gloo,shm "
      "--comm-hook allreduce,bf16,bf16");
  EXPECT_EQ(settings.models, (std::vector<std::string>{"mlp", "cnn"}));  // repeats dropped
  EXPECT_EQ(settings.batch_size, 4);
  EXPECT_EQ(settings.iterations, 3);
  EXPECT_EQ(settings.warmup, 0);
  EXPECT_EQ(settings.world_sizes, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(settings.ranks, 4);
  EXPECT_TRUE(settings.reference_pytorch);
  EXPECT_FALSE(settings.shared_buckets);
  EXPECT_EQ(settings.repeat, 3);
  EXPECT_EQ(settings.backends, (std::vector<std::string>{"gloo", "shm"}));
  EXPECT_EQ(settings.comm_hooks, (std::vector<std::string>{"allreduce", "bf16"}));
  EXPECT_EQ(describe_ddp_settings(settings, 1),
            "preset quick: models mlp,cnn, batch 4 per rank, images 64x64, bucket cap 25 MiB, "
            "0 warm-up + 3 timed iterations, world sizes 1,2,4, 1 thread per rank, reference "
            "pytorch, 3 repeats, ordinary (not shared) buckets, backend gloo,shm, comm hook "
            "allreduce,bf16");
}

TEST(DdpSettingsTest, WorldSizesFollowTheJob) {
  EXPECT_EQ(default_world_sizes(1), (std::vector<int>{1}));
  EXPECT_EQ(default_world_sizes(4), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(default_world_sizes(6), (std::vector<int>{1, 2, 4, 6}));
  EXPECT_EQ(resolve("--max-ranks 8").world_sizes, (std::vector<int>{1, 2, 4, 8}));
  // In a job of 3 ranks: the job decides, and all 3 take part.
  const DdpSettings in_job = resolve("--max-ranks 8", 3);
  EXPECT_EQ(in_job.world_sizes, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(in_job.ranks, 3);
  EXPECT_EQ(resolve("--world-sizes 1", 3).ranks, 3);
  EXPECT_THROW(resolve("--world-sizes 4", 3), InvalidArgument);
}

TEST(DdpSettingsTest, RejectsBadValues) {
  EXPECT_THROW(resolve("--model resnet18,resnet9000"), InvalidArgument);
  EXPECT_THROW(resolve("--comm-hook allreduce,int8"), InvalidArgument);
  EXPECT_THROW(resolve("--backend gloo,gloo"), InvalidArgument);
  EXPECT_THROW(resolve("--backend gloo,mpi"), CLI::ValidationError);
  EXPECT_THROW(resolve("--reference tensorflow"), CLI::ValidationError);
  EXPECT_THROW(resolve("--world-sizes 0"), CLI::ValidationError);
}

TEST(DdpReferenceTest, CommandCarriesTheSettings) {
  const DdpSettings settings = resolve("--preset quick --bucket-cap-mb 2.5");
  const auto command =
      reference_command({"/usr/bin/python3", "1.13.0"}, "ddp_reference.py", settings, 1, "r.json");
  const std::vector<std::string> expected = {"/usr/bin/python3",
                                             "ddp_reference.py",
                                             "--models",
                                             "resnet18,cnn",
                                             "--batch-size",
                                             "8",
                                             "--image-size",
                                             "64",
                                             "--bucket-cap-mb",
                                             "2.5",
                                             "--warmup",
                                             "5",
                                             "--iterations",
                                             "40",
                                             "--world-sizes",
                                             "1,2",
                                             "--threads",
                                             "1",
                                             "--quiet",
                                             "--json",
                                             "r.json"};
  EXPECT_EQ(command, expected);
  DdpSettings interleaved = settings;
  interleaved.interleave = true;
  interleaved.gradient_as_bucket_view = true;
  const auto with_flags =
      reference_command({"/usr/bin/python3", "1.13.0"}, "ddp_reference.py", interleaved, 1, "");
  EXPECT_EQ(with_flags[with_flags.size() - 2], "--interleave");
  EXPECT_EQ(with_flags.back(), "--gradient-as-bucket-view");
  std::string why_not;
  DdpSettings missing = settings;
  missing.python = "/nonexistent/python";
  EXPECT_FALSE(find_reference(ddp_reference_needs(missing), why_not));
  EXPECT_NE(why_not.find("no Python interpreter with torch: tried /nonexistent/python (not found)"),
            std::string::npos)
      << why_not;
}

}  // namespace
}  // namespace gradwire::bench
