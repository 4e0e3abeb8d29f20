#include "cases/ddp_settings.h"

#include <gtest/gtest.h>

#include "cases/ddp_reference.h"
#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

TEST(DdpSettingsTest, DefaultPresetIsUpstreams) {
  const DdpSettings settings = resolve_ddp_settings({}, std::nullopt);
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
}

TEST(DdpSettingsTest, QuickPresetAndOverrides) {
  DdpFlags flags;
  flags.preset = "quick";
  DdpSettings settings = resolve_ddp_settings(flags, std::nullopt);
  EXPECT_EQ(settings.models, (std::vector<std::string>{"resnet18", "cnn"}));
  EXPECT_EQ(settings.batch_size, 8);
  EXPECT_EQ(settings.image_size, 64);

  flags.models = {"mlp", "cnn", "mlp"};
  flags.batch_size = 4;
  flags.iterations = 3;
  flags.warmup = 0;
  flags.world_sizes = {4, 1, 2, 2};
  flags.reference = "pytorch";
  settings = resolve_ddp_settings(flags, std::nullopt);
  EXPECT_EQ(settings.models, (std::vector<std::string>{"mlp", "cnn"}));
  EXPECT_EQ(settings.batch_size, 4);
  EXPECT_EQ(settings.iterations, 3);
  EXPECT_EQ(settings.warmup, 0);
  EXPECT_EQ(settings.world_sizes, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(settings.ranks, 4);
  EXPECT_TRUE(settings.reference_pytorch);
  EXPECT_NE(describe_ddp_settings(settings, 1).find("models mlp,cnn"), std::string::npos);
}

TEST(DdpSettingsTest, WorldSizesFollowTheJob) {
  EXPECT_EQ(default_world_sizes(1), (std::vector<int>{1}));
  EXPECT_EQ(default_world_sizes(4), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(default_world_sizes(6), (std::vector<int>{1, 2, 4, 6}));
  DdpFlags flags;
  flags.max_ranks = 8;
  EXPECT_EQ(resolve_ddp_settings(flags, std::nullopt).world_sizes, (std::vector<int>{1, 2, 4, 8}));
  // In a job of 3 ranks: the job decides, and all 3 take part.
  const DdpSettings in_job = resolve_ddp_settings(flags, 3);
  EXPECT_EQ(in_job.world_sizes, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(in_job.ranks, 3);
  flags.world_sizes = {1};
  EXPECT_EQ(resolve_ddp_settings(flags, 3).ranks, 3);
  flags.world_sizes = {4};
  EXPECT_THROW(resolve_ddp_settings(flags, 3), InvalidArgument);
}

TEST(DdpSettingsTest, RejectsBadValues) {
  DdpFlags flags;
  flags.models = {"resnet9000"};
  EXPECT_THROW(resolve_ddp_settings(flags, std::nullopt), InvalidArgument);
  flags = {};
  flags.preset = "slow";
  EXPECT_THROW(resolve_ddp_settings(flags, std::nullopt), InvalidArgument);
  flags = {};
  flags.iterations = 0;
  EXPECT_THROW(resolve_ddp_settings(flags, std::nullopt), InvalidArgument);
  flags = {};
  flags.reference = "tensorflow";
  EXPECT_THROW(resolve_ddp_settings(flags, std::nullopt), InvalidArgument);
  flags = {};
  flags.repeat = 0;
  EXPECT_THROW(resolve_ddp_settings(flags, std::nullopt), InvalidArgument);
  flags.repeat = 3;
  EXPECT_EQ(resolve_ddp_settings(flags, std::nullopt).repeat, 3);
}

TEST(DdpReferenceTest, CommandCarriesTheSettings) {
  DdpFlags flags;
  flags.preset = "quick";
  flags.bucket_cap_mb = 2.5;
  const DdpSettings settings = resolve_ddp_settings(flags, std::nullopt);
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

TEST(DdpSettingsTest, BackendsAndCommHooks) {
  DdpSettings settings = resolve_ddp_settings({}, std::nullopt);
  EXPECT_EQ(settings.backends, std::vector<std::string>{"gloo"});
  EXPECT_EQ(settings.comm_hooks, std::vector<std::string>{"allreduce"});
  DdpFlags flags;
  flags.backends = {"gloo", "shm"};
  flags.comm_hooks = {"allreduce", "bf16", "bf16"};
  settings = resolve_ddp_settings(flags, std::nullopt);
  EXPECT_EQ(settings.backends, (std::vector<std::string>{"gloo", "shm"}));
  EXPECT_EQ(settings.comm_hooks, (std::vector<std::string>{"allreduce", "bf16"}));
  EXPECT_NE(describe_ddp_settings(settings, 1).find("backend gloo,shm, comm hook allreduce,bf16"),
            std::string::npos)
      << describe_ddp_settings(settings, 1);
  flags.backends = {"gloo", "mpi"};
  EXPECT_THROW(resolve_ddp_settings(flags, std::nullopt), InvalidArgument);
  flags.backends = {};
  flags.comm_hooks = {"int8"};
  EXPECT_THROW(resolve_ddp_settings(flags, std::nullopt), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::bench
