#include "cases/ddp_settings.h"

#include <algorithm>
#include <sstream>

#include "cases/collectives_settings.h"
#include "gradwire/common/error.h"
#include "gradwire/ddp/comm_hook.h"
#include "gradwire/models/zoo.h"
#include "harness/table.h"

namespace gradwire::bench {

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

DdpSettings resolve_ddp_settings(const DdpFlags& flags, std::optional<int> job_world_size) {
  DdpSettings settings = ddp_options().resolve(flags);
  // De-duplicate while keeping the order given.
  std::vector<std::string> unique_models;
  for (const auto& name : settings.models) {
    if (std::find(unique_models.begin(), unique_models.end(), name) == unique_models.end()) {
      unique_models.push_back(name);
    }
  }
  settings.models = unique_models;
  check_model_names(settings.models);
  if (settings.batch_size < 1 || settings.image_size < 1 || !(settings.bucket_cap_mb > 0) ||
      settings.iterations < 1 || settings.warmup < 0 || settings.repeat < 1) {
    throw InvalidArgument(
        "batch size, image size, bucket size, iterations and repeats must be positive and "
        "warm-up non-negative");
  }

  if (flags.world_sizes.empty()) {
    settings.world_sizes =
        default_world_sizes(job_world_size.value_or(flags.max_ranks.value_or(kDefaultMaxRanks)));
  } else {
    settings.world_sizes = flags.world_sizes;
    std::sort(settings.world_sizes.begin(), settings.world_sizes.end());
    settings.world_sizes.erase(
        std::unique(settings.world_sizes.begin(), settings.world_sizes.end()),
        settings.world_sizes.end());
    if (settings.world_sizes.front() < 1) throw InvalidArgument("world sizes must be >= 1");
  }
  settings.ranks = settings.world_sizes.back();
  if (job_world_size && settings.ranks > *job_world_size) {
    throw InvalidArgument(
        "world size " + std::to_string(settings.ranks) + " was asked for but this job has only " +
        std::to_string(*job_world_size) + " ranks: start more ranks or lower --world-sizes");
  }
  // Inside a job every rank takes part (the idle ones wait), so the sweep needs all of them.
  if (job_world_size) settings.ranks = *job_world_size;

  settings.json_path = flags.json_path;
  settings.html_path = flags.html_path;
  settings.interleave = flags.interleave;
  settings.side_by_side = flags.side_by_side;
  settings.gradient_as_bucket_view = flags.gradient_as_bucket_view;
  settings.shared_buckets = !flags.no_shared_buckets;
  if (!flags.reference.empty() && flags.reference != "pytorch") {
    throw InvalidArgument("unknown reference '" + flags.reference + "': use pytorch");
  }
  settings.reference_pytorch = flags.reference == "pytorch";
  settings.python = flags.python;
  settings.reference_script = flags.reference_script;
  settings.backends = resolve_backends(flags.backends);
  if (!flags.comm_hooks.empty()) {
    const auto known = ddp::comm_hook_names();
    settings.comm_hooks.clear();
    for (const auto& hook : flags.comm_hooks) {
      if (std::find(known.begin(), known.end(), hook) == known.end()) {
        throw InvalidArgument("unknown comm hook '" + hook + "': use one of " + join(known, ", "));
      }
      if (std::find(settings.comm_hooks.begin(), settings.comm_hooks.end(), hook) ==
          settings.comm_hooks.end()) {
        settings.comm_hooks.push_back(hook);
      }
    }
  }
  return settings;
}

std::string describe_ddp_settings(const DdpSettings& settings, int threads_per_rank) {
  std::ostringstream text;
  text << "preset " << settings.preset << ": models " << join(settings.models, ",") << ", batch "
       << settings.batch_size << " per rank, images " << settings.image_size << "x"
       << settings.image_size << ", bucket cap " << settings.bucket_cap_mb << " MiB, "
       << settings.warmup << " warm-up + " << settings.iterations
       << " timed iterations, world sizes ";
  for (std::size_t i = 0; i < settings.world_sizes.size(); ++i) {
    text << (i > 0 ? "," : "") << settings.world_sizes[i];
  }
  text << ", " << threads_per_rank << (threads_per_rank == 1 ? " thread" : " threads")
       << " per rank" << (settings.reference_pytorch ? ", reference pytorch" : "");
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

}  // namespace gradwire::bench
