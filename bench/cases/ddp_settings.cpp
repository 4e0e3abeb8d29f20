#include "cases/ddp_settings.h"

#include <algorithm>
#include <sstream>

#include "cases/collectives_settings.h"
#include "cases/ddp_report.h"
#include "gradwire/common/error.h"
#include "gradwire/ddp/comm_hook.h"
#include "gradwire/models/zoo.h"
#include "harness/table.h"

namespace gradwire::bench {

OptionTable<DdpSettings> ddp_options() {
  using Settings = DdpSettings;
  OptionTable<Settings> options({"default", "quick"},
                                "settings preset (quick: resnet18 and cnn, small)");
  options
      .preset_value("--model", &Settings::models, {{"quick", {"resnet18", "cnn"}}},
                    "models to run, repeatable or comma-separated", comma_separated)
      .preset_value("--batch-size", &Settings::batch_size, {{"quick", 8}}, "examples per rank",
                    positive_number)
      .preset_value("--image-size", &Settings::image_size, {{"quick", 64}}, "ResNet input size",
                    positive_number)
      .preset_value("--bucket-cap-mb", &Settings::bucket_cap_mb, {}, "DDP bucket cap in MiB",
                    positive_number)
      .preset_value("--iterations", &Settings::iterations, {{"quick", 40}}, "timed iterations",
                    positive_number)
      .preset_value("--warmup", &Settings::warmup, {}, "warm-up iterations", non_negative_number)
      .option("--world-sizes", &Settings::world_sizes,
              "DDP rank counts, e.g. 1,2,4 [1, 2, 4, ... up to --max-ranks or the job]",
              [](CLI::Option& option) { option.delimiter(',')->check(CLI::PositiveNumber); })
      .option("--max-ranks", &Settings::max_ranks,
              "largest default world size when starting local ranks [" +
                  std::to_string(Settings{}.max_ranks) + "]",
              positive_number)
      .option("--backend", &Settings::backends,
              "communicator backends, each measured in the same run, e.g. gloo,shm [gloo; nccl "
              "with --device cuda]",
              names_from(benchmark_backends()))
      .option("--comm-hook", &Settings::comm_hooks,
              "DDP comm hooks, each measured in the same run, e.g. allreduce,bf16 [allreduce]",
              comma_separated)
      .option("--device", &Settings::device,
              "where the model trains: cpu, or cuda (a GPU per rank, the nccl backend) [cpu]",
              names_from({"cpu", "cuda"}))
      .switch_flag("--gradient-as-bucket-view", &Settings::gradient_as_bucket_view,
                   "DdpOptions::gradient_as_bucket_view (and PyTorch's, for the reference)")
      .switch_flag("--no-shared-buckets", &Settings::shared_buckets,
                   "DdpOptions::shared_buckets = false: buckets in ordinary memory, which the "
                   "shm backend copies through its segment",
                   false)
      .switch_flag("--interleave", &Settings::interleave,
                   "run the no-ddp baseline and DDP on 1 rank in one process, alternating "
                   "iteration by iteration (robust DDP overhead on a noisy machine)")
      .switch_flag("--side-by-side", &Settings::side_by_side,
                   "after the baseline, train without DDP on every rank of the largest world "
                   "size at once and report the slowest rank: the pace DDP cannot beat on this "
                   "machine");
  add_training_flags(options, "PyTorch's own DDP and compare", "the sweep (and the reference)",
                     "ddp_reference.py");
  return options;
}

void check_model_names(const std::vector<std::string>& names) {
  std::vector<std::string> known;
  for (const auto& info : models::model_catalog()) known.push_back(info.name);
  for (const auto& name : names) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw InvalidArgument("unknown model '" + name + "': use one of " + join(known, ", "));
    }
  }
}

std::vector<int> default_world_sizes(int max_ranks) {
  if (max_ranks < 1) throw InvalidArgument("the largest world size must be at least 1");
  std::vector<int> sizes;
  for (int size = 1; size < max_ranks; size *= 2) sizes.push_back(size);
  sizes.push_back(max_ranks);
  return sizes;
}

DdpSettings resolve_ddp_settings(const OptionTable<DdpSettings>& options,
                                 std::optional<int> job_world_size) {
  DdpSettings settings = options.resolve();
  settings.models = distinct(settings.models);
  check_model_names(settings.models);

  settings.world_sizes = settings.world_sizes.empty()
                             ? default_world_sizes(job_world_size.value_or(settings.max_ranks))
                             : sorted_distinct(settings.world_sizes);
  settings.ranks = settings.world_sizes.back();
  if (job_world_size && settings.ranks > *job_world_size) {
    throw InvalidArgument(
        "world size " + std::to_string(settings.ranks) + " was asked for but this job has only " +
        std::to_string(*job_world_size) + " ranks: start more ranks or lower --world-sizes");
  }
  // Inside a job every rank takes part (the idle ones wait), so the sweep needs all of them.
  if (job_world_size) settings.ranks = *job_world_size;

  if (settings.device == "cuda") {
    if (settings.backends.empty()) settings.backends = {"nccl"};
    for (const auto& backend : settings.backends) {
      if (backend != "nccl") {
        throw InvalidArgument("--device cuda takes the nccl backend, not '" + backend + "'");
      }
    }
  }
  if (settings.backends.empty()) settings.backends = {"gloo"};
  settings.backends = resolve_backends(settings.backends);
  const auto known = ddp::comm_hook_names();
  for (const auto& hook : settings.comm_hooks) {
    if (std::find(known.begin(), known.end(), hook) == known.end()) {
      throw InvalidArgument("unknown comm hook '" + hook + "': use one of " + join(known, ", "));
    }
  }
  settings.comm_hooks = distinct(settings.comm_hooks);
  return settings;
}

std::string describe_ddp_settings(const DdpSettings& settings, int threads_per_rank) {
  std::ostringstream text;
  text << "preset " << settings.preset << ": models " << join(settings.models, ",") << ", batch "
       << settings.batch_size << " per rank, images " << settings.image_size << "x"
       << settings.image_size << ", bucket cap " << settings.bucket_cap_mb << " MiB, "
       << settings.warmup << " warm-up + " << settings.iterations
       << " timed iterations, world sizes " << joined(settings.world_sizes, ",") << ", "
       << counted(threads_per_rank, "thread") << " per rank"
       << (settings.reference_pytorch ? ", reference pytorch" : "");
  if (settings.repeat > 1) text << ", " << settings.repeat << " repeats";
  if (settings.interleave) text << ", baseline and 1 rank interleaved";
  if (settings.side_by_side) text << ", no ddp side by side";
  if (settings.gradient_as_bucket_view) text << ", gradient_as_bucket_view";
  if (!settings.shared_buckets) text << ", ordinary (not shared) buckets";
  text << ", backend " << join(settings.backends, ",");
  if (settings.comm_hooks != std::vector<std::string>{"allreduce"}) {
    text << ", comm hook " << join(settings.comm_hooks, ",");
  }
  return text.str();
}

const TrainingFormat& ddp_format() {
  static const TrainingFormat kFormat{
      "ddp",
      "DistributedDataParallel training iteration time over models and rank counts (PyTorch's "
      "DDP benchmark)",
      "ddp",
      "iteration",
      kDdpRateColumns,
      {"forward", "backward", "communication"},
      "ddp_reference.py",
      true};
  return kFormat;
}

}  // namespace gradwire::bench
