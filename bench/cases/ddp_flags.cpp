// The command-line flags of `gradwire-bench ddp` (ddp_flags.h): ddp_options(), the option table
// with every default, and the rank options beside it.
#include "cases/ddp_flags.h"

#include "cases/collectives_settings.h"
#include "cases/ddp_settings.h"

namespace gradwire::bench {

const OptionTable<DdpFlags, DdpSettings>& ddp_options() {
  using Flags = DdpFlags;
  using Settings = DdpSettings;
  static const auto table = [] {
    OptionTable<Flags, Settings> options({"default", "quick"},
                                         "settings preset (quick: resnet18 and cnn, small)");
    options
        .preset_value("--model", &Flags::models, &Settings::models,
                      {{"quick", {"resnet18", "cnn"}}},
                      "models to run, repeatable or comma-separated", comma_separated)
        .preset_value("--batch-size", &Flags::batch_size, &Settings::batch_size, {{"quick", 8}},
                      "examples per rank", positive_number)
        .preset_value("--image-size", &Flags::image_size, &Settings::image_size, {{"quick", 64}},
                      "ResNet input size", positive_number)
        .preset_value("--bucket-cap-mb", &Flags::bucket_cap_mb, &Settings::bucket_cap_mb, {},
                      "DDP bucket cap in MiB", positive_number)
        .preset_value("--iterations", &Flags::iterations, &Settings::iterations, {{"quick", 40}},
                      "timed iterations", positive_number)
        .preset_value("--warmup", &Flags::warmup, &Settings::warmup, {}, "warm-up iterations",
                      non_negative_number)
        .option("--world-sizes", &Flags::world_sizes,
                "DDP rank counts, e.g. 1,2,4 [1, 2, 4, ... up to --max-ranks or the job]",
                [](CLI::Option& option) { option.delimiter(',')->check(CLI::PositiveNumber); })
        .option("--max-ranks", &Flags::max_ranks,
                "largest default world size when starting local ranks [" +
                    std::to_string(kDefaultMaxRanks) + "]",
                positive_number)
        .option("--backend", &Flags::backends,
                "communicator backends, each measured in the same run, e.g. gloo,shm [gloo]",
                [](CLI::Option& option) {
                  option.delimiter(',')->check(CLI::IsMember(benchmark_backends()));
                })
        .option("--comm-hook", &Flags::comm_hooks,
                "DDP comm hooks, each measured in the same run, e.g. allreduce,bf16 [allreduce]",
                comma_separated)
        .option("--json", &Flags::json_path, "write the results to this JSON file")
        .option("--html", &Flags::html_path,
                "draw the results into this HTML page (gradwire-bench report)")
        .option("--reference", &Flags::reference,
                "also run PyTorch's own DDP (bench/reference/ddp_reference.py) and compare",
                [](CLI::Option& option) { option.check(CLI::IsMember({"pytorch"})); })
        .switch_flag("--gradient-as-bucket-view", &Flags::gradient_as_bucket_view,
                     "DdpOptions::gradient_as_bucket_view (and PyTorch's, for the reference)")
        .switch_flag("--no-shared-buckets", &Flags::no_shared_buckets,
                     "DdpOptions::shared_buckets = false: buckets in ordinary memory, which the "
                     "shm backend copies through its segment")
        .switch_flag("--interleave", &Flags::interleave,
                     "run the no-ddp baseline and DDP on 1 rank in one process, alternating "
                     "iteration by iteration (robust DDP overhead on a noisy machine)")
        .switch_flag("--side-by-side", &Flags::side_by_side,
                     "after the baseline, train without DDP on every rank of the largest world "
                     "size at once and report the slowest rank: the pace DDP cannot beat on this "
                     "machine")
        .preset_value("--repeat", &Flags::repeat, &Settings::repeat, {},
                      "run the sweep (and the reference after it) this many times, alternating, "
                      "and pool the measurements",
                      positive_number)
        .option("--python", &Flags::python,
                "Python with torch for --reference [python3, then /usr/bin/python3]")
        .option("--reference-script", &Flags::reference_script,
                "path of ddp_reference.py [the source tree's, then the installed copy]");
    return options;
  }();
  return table;
}

void add_ddp_flags(CLI::App& command, DdpFlags& flags, RankOptions& ranks) {
  ddp_options().attach(command, flags);
  command
      .add_option("--threads", ranks.threads_per_rank,
                  "intra-op threads per rank [cores / local ranks]")
      ->check(CLI::PositiveNumber);
  // Unbound by default: DDP's reductions run on a progress thread beside the compute thread,
  // and a rank bound to one core must time-share it (docs/performance.md).
  ranks.bind_cores = false;
  add_bind_cores_flag(command, ranks);
}

}  // namespace gradwire::bench
