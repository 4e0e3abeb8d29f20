// The command-line flags of `gradwire-bench ddp` (ddp_flags.h).
#include "cases/ddp_flags.h"

#include "cases/collectives_settings.h"
#include "cases/ddp_settings.h"

namespace gradwire::bench {

void add_ddp_flags(CLI::App& command, DdpFlags& flags, RankOptions& ranks) {
  command
      .add_option("--preset", flags.preset, "settings preset (quick: resnet18 and cnn, small)")
      ->check(CLI::IsMember(ddp_presets()))
      ->capture_default_str();
  command
      .add_option("--model", flags.models,
                  "models to run, repeatable or comma-separated [default: resnet50, resnet101, "
                  "resnext50_32x4d, resnext101_32x8d; quick: resnet18, cnn]")
      ->delimiter(',');
  command.add_option("--batch-size", flags.batch_size, "examples per rank [32; quick 8]")
      ->check(CLI::PositiveNumber);
  command.add_option("--image-size", flags.image_size, "ResNet input size [224; quick 64]")
      ->check(CLI::PositiveNumber);
  command.add_option("--bucket-cap-mb", flags.bucket_cap_mb, "DDP bucket cap in MiB [25]")
      ->check(CLI::PositiveNumber);
  command.add_option("--iterations", flags.iterations, "timed iterations [10; quick 40]")
      ->check(CLI::PositiveNumber);
  command.add_option("--warmup", flags.warmup, "warm-up iterations [5]")
      ->check(CLI::NonNegativeNumber);
  command
      .add_option("--world-sizes", flags.world_sizes,
                  "DDP rank counts, e.g. 1,2,4 [1, 2, 4, ... up to --max-ranks or the job]")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  command
      .add_option("--max-ranks", flags.max_ranks,
                  "largest default world size when starting local ranks [2]")
      ->check(CLI::PositiveNumber);
  command
      .add_option("--backend", flags.backends,
                  "communicator backends, each measured in the same run, e.g. gloo,shm [gloo]")
      ->delimiter(',')
      ->check(CLI::IsMember(benchmark_backends()));
  command
      .add_option("--comm-hook", flags.comm_hooks,
                  "DDP comm hooks, each measured in the same run, e.g. allreduce,bf16 "
                  "[allreduce]")
      ->delimiter(',');
  command
      .add_option("--threads", ranks.threads_per_rank,
                  "intra-op threads per rank [cores / local ranks]")
      ->check(CLI::PositiveNumber);
  // Unbound by default: DDP's reductions run on a progress thread beside the compute thread,
  // and a rank bound to one core must time-share it (docs/performance.md).
  ranks.bind_cores = false;
  add_bind_cores_flag(command, ranks);
  command.add_option("--json", flags.json_path, "write the results to this JSON file");
  command.add_option("--html", flags.html_path,
                     "draw the results into this HTML page (gradwire-bench report)");
  command
      .add_option("--reference", flags.reference,
                  "also run PyTorch's own DDP (bench/reference/ddp_reference.py) and compare")
      ->check(CLI::IsMember({"pytorch"}));
  command.add_flag("--gradient-as-bucket-view", flags.gradient_as_bucket_view,
                   "DdpOptions::gradient_as_bucket_view (and PyTorch's, for the reference)");
  command.add_flag("--no-shared-buckets", flags.no_shared_buckets,
                   "DdpOptions::shared_buckets = false: buckets in ordinary memory, which the "
                   "shm backend copies through its segment");
  command.add_flag("--interleave", flags.interleave,
                   "run the no-ddp baseline and DDP on 1 rank in one process, alternating "
                   "iteration by iteration (robust DDP overhead on a noisy machine)");
  command.add_flag("--side-by-side", flags.side_by_side,
                   "after the baseline, train without DDP on every rank of the largest world "
                   "size at once and report the slowest rank: the pace DDP cannot beat on this "
                   "machine");
  command
      .add_option("--repeat", flags.repeat,
                  "run the sweep (and the reference after it) this many times, alternating, "
                  "and pool the measurements [1]")
      ->check(CLI::PositiveNumber);
  command.add_option("--python", flags.python,
                     "Python with torch for --reference [python3, then /usr/bin/python3]");
  command.add_option("--reference-script", flags.reference_script,
                     "path of ddp_reference.py [the source tree's, then the installed copy]");
}

}  // namespace gradwire::bench
