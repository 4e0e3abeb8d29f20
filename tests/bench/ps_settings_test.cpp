// gradwire-bench ps: flags -> settings (defaults, the quick preset, modes sync/async/stale:K,
// roles, the comparisons, the reference's limits, threads per process) and their refusals.
#include "cases/ps_settings.h"

#include <gtest/gtest.h>

#include "bench_process.h"
#include "cases/ps_case.h"
#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

using testing::invalid_argument_message;

PsSettings resolve(const std::string& flags) {
  return resolve_ps_settings(ps_options().parse(flags));
}

TEST(PsSettings, Defaults) {
  const PsSettings s = resolve("");
  EXPECT_EQ(s.model, "resnet18");
  EXPECT_EQ(s.trainers, 2);
  EXPECT_EQ(s.servers, 2);
  EXPECT_TRUE(s.mode.sync);
  EXPECT_EQ(s.role, PsRole::kOptimizer);
  EXPECT_EQ(s.batch_size, 8);
  EXPECT_EQ(s.image_size, 64);
  EXPECT_EQ(s.num_classes, 10);
  EXPECT_EQ(s.warmup, 5);
  EXPECT_EQ(s.iterations, 10);
  EXPECT_EQ(s.passes, 3);
  EXPECT_EQ(s.measured_iterations(), 30);
  EXPECT_TRUE(s.compare.empty());
  EXPECT_FALSE(s.reference_pytorch);
  EXPECT_EQ(s.repeat, 1);
  EXPECT_FALSE(s.threads.has_value());
  EXPECT_FALSE(s.print_layout);
}

TEST(PsSettings, QuickPresetAndFlagsOverride) {
  PsSettings s = resolve("--preset quick");
  EXPECT_EQ(s.image_size, 32);
  EXPECT_EQ(s.batch_size, 2);
  EXPECT_EQ(s.iterations, 2);
  EXPECT_EQ(s.passes, 2);
  EXPECT_EQ(s.warmup, 1);
  s = resolve(
      "--preset quick --model vgg11 --trainers 3 --servers 1 --mode async --batch-size 4 "
      "--image-size 48 --num-classes 7 --iterations 5 --warmup 0 --passes 4 --seed 9 --repeat 2 "
      "--threads 3 --print-layout --json x.json --html x.html");
  EXPECT_EQ(s.model, "vgg11");
  EXPECT_EQ(s.trainers, 3);
  EXPECT_EQ(s.servers, 1);
  EXPECT_FALSE(s.mode.sync);
  EXPECT_EQ(s.batch_size, 4);
  EXPECT_EQ(s.image_size, 48);
  EXPECT_EQ(s.num_classes, 7);
  EXPECT_EQ(s.measured_iterations(), 20);
  EXPECT_EQ(s.warmup, 0);
  EXPECT_EQ(s.seed, 9u);
  EXPECT_EQ(s.repeat, 2);
  EXPECT_EQ(s.threads, 3);
  EXPECT_TRUE(s.print_layout);
  EXPECT_EQ(s.json_path, "x.json");
  EXPECT_EQ(s.html_path, "x.html");
  EXPECT_EQ(describe_ps_settings(s),
            "preset quick: vgg11, 3 trainers x 1 server, batch 4 per trainer, 48x48 images, 7 "
            "classes, async, role optimizer, 0 warm-up + 4 passes of 5 iterations, seed 9, 2 "
            "repeats");
}

TEST(PsSettings, ModesSyncAsyncAndStale) {
  EXPECT_TRUE(parse_ps_mode("sync").sync);
  EXPECT_FALSE(parse_ps_mode("async").sync);
  EXPECT_EQ(parse_ps_mode("async").staleness, 0);
  const PsMode stale = parse_ps_mode("stale:3");
  EXPECT_FALSE(stale.sync);
  EXPECT_EQ(stale.staleness, 3);
  EXPECT_TRUE(parse_ps_mode("stale:0").sync);  // stale:0 is sync
  EXPECT_EQ(to_string(parse_ps_mode("stale:0")), "sync");
  EXPECT_EQ(to_string(stale), "stale:3");
  EXPECT_EQ(to_string(parse_ps_mode("async")), "async");
  EXPECT_EQ(resolve("--mode stale:2").mode.staleness, 2);
  for (const char* bad : {"stale:", "stale:-1", "stale:x", "stale:1.5", "stale", "eventually",
                          "SYNC", "stale:1234567890"}) {
    EXPECT_NE(
        invalid_argument_message([&] { parse_ps_mode(bad); }).find("use sync, async or stale:K"),
        std::string::npos)
        << bad;
  }
  EXPECT_THROW(resolve("--mode stale:x"), InvalidArgument);
}

TEST(PsSettings, Roles) {
  EXPECT_EQ(resolve("--role sum").role, PsRole::kSum);
  EXPECT_EQ(resolve("--role optimizer").role, PsRole::kOptimizer);
  EXPECT_STREQ(to_string(PsRole::kSum), "sum");
  EXPECT_THROW(resolve("--role average"), CLI::ValidationError);
  // The summation role holds one step's gradients: sync only.
  EXPECT_NE(invalid_argument_message([] {
              resolve("--role sum --mode async");
            }).find("--role sum needs --mode sync"),
            std::string::npos);
  EXPECT_THROW(resolve("--role sum --mode stale:1"), InvalidArgument);
  EXPECT_EQ(resolve("--role sum --mode stale:0").role, PsRole::kSum);
}

TEST(PsSettings, CompareListInAFixedOrderOnce) {
  EXPECT_EQ(resolve("--compare ddp").compare, (std::vector<std::string>{"ddp"}));
  EXPECT_EQ(resolve("--compare local,ddp").compare, (std::vector<std::string>{"ddp", "local"}));
  EXPECT_EQ(resolve("--compare local --compare ddp,local").compare,
            (std::vector<std::string>{"ddp", "local"}));
  EXPECT_TRUE(resolve("--compare local").compares("local"));
  EXPECT_FALSE(resolve("--compare local").compares("ddp"));
  EXPECT_THROW(resolve("--compare horovod"), CLI::ValidationError);
  EXPECT_NE(describe_ps_settings(resolve("--compare ddp,local")).find(", compare ddp,local"),
            std::string::npos);
}

TEST(PsSettings, ErrorsNameWhatToChange) {
  EXPECT_NE(invalid_argument_message([] { resolve("--model resnet9"); }).find("unknown model"),
            std::string::npos);
  EXPECT_THROW(resolve("--trainers 0"), CLI::ValidationError);
  EXPECT_THROW(resolve("--iterations 0"), CLI::ValidationError);
  EXPECT_THROW(resolve("--warmup -1"), CLI::ValidationError);
  EXPECT_THROW(resolve("--reference tensorflow"), CLI::ValidationError);
  // What ps_reference.py cannot run.
  EXPECT_NE(invalid_argument_message([] {
              resolve("--reference pytorch --model resnet50");
            }).find("--reference pytorch has the models resnet18, vgg11, vgg16"),
            std::string::npos);
  EXPECT_THROW(resolve("--reference pytorch --image-size 16"), InvalidArgument);
  EXPECT_THROW(resolve("--reference pytorch --mode async"), InvalidArgument);
  EXPECT_TRUE(resolve("--reference pytorch --role sum").reference_pytorch);
}

TEST(PsSettings, ThreadsPerProcessOfEachRun) {
  // 2 trainers + 2 servers on 8 cores: 2 each; DDP's 2 trainers: 4; the local process: 8.
  PsThreads threads = ps_thread_counts(resolve(""), 8);
  EXPECT_EQ(threads.ps, 2);
  EXPECT_EQ(threads.ddp, 4);
  EXPECT_EQ(threads.local, 8);
  threads = ps_thread_counts(resolve(""), 2);
  EXPECT_EQ(threads.ps, 1);  // never below one
  EXPECT_EQ(threads.ddp, 1);
  EXPECT_EQ(threads.local, 2);
  threads = ps_thread_counts(resolve("--threads 3"), 2);
  EXPECT_EQ(threads.ps, 3);
  EXPECT_EQ(threads.local, 3);
}

TEST(PsSettings, TheReferenceGetsTheSameSettings) {
  const PsSettings s = resolve("--preset quick --servers 3 --seed 4 --reference pytorch");
  const std::vector<std::string> command = ps_reference_command({"python3", "2.0"}, "ps.py", s);
  const std::vector<std::string> expected = {
      "python3",        "ps.py",    "--trainers",    "2",    "--servers",    "3",
      "--model",        "resnet18", "--batch-size",  "2",    "--image-size", "32",
      "--num-classes",  "10",       "--lr",          "0.01", "--momentum",   "0.9",
      "--warmup",       "1",        "--iterations",  "2",    "--passes",     "2",
      "--seed",         "4",        "--timeout",     "650",  // 10 min + 2 s per iteration and
                                                             // process
      "--plain-warmup", "3",        "--plain-steps", "10"};  // its plain step, as ours
  EXPECT_EQ(command, expected);
}

}  // namespace
}  // namespace gradwire::bench
