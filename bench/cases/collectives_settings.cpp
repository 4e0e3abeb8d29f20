#include "cases/collectives_settings.h"

#include <algorithm>

#include "cases/collective_ops.h"
#include "gradwire/common/error.h"
#include "harness/bandwidth.h"
#include "harness/table.h"

namespace gradwire::bench {

namespace {

struct Preset {
  std::uint64_t min_bytes;
  std::uint64_t max_bytes;
  IterationPolicy policy;
};

Preset preset_named(const std::string& name) {
  constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
  if (name == "default") return {8, 256 * kMiB, IterationPolicy{50, 5, 3, 1024 * kMiB, 0.02}};
  if (name == "quick") return {8, 16 * kMiB, IterationPolicy{20, 2, 3, 64 * kMiB, 0.005}};
  throw InvalidArgument("unknown preset '" + name + "': use default or quick");
}

}  // namespace

const std::vector<std::string>& benchmark_backends() {
  static const std::vector<std::string> kBackends = {"gloo", "shm", "hierarchical", "nccl", "auto"};
  return kBackends;
}

std::vector<std::string> resolve_backends(const std::vector<std::string>& given) {
  if (given.empty()) return {"gloo"};
  const auto& known = benchmark_backends();
  std::vector<std::string> backends;
  for (const auto& name : given) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw InvalidArgument("unknown backend '" + name + "': use " + join_backends(known) +
                            ", or several separated by commas");
    }
    if (std::find(backends.begin(), backends.end(), name) != backends.end()) {
      throw InvalidArgument("backend '" + name + "' is given twice in --backend");
    }
    backends.push_back(name);
  }
  return backends;
}

std::string join_backends(const std::vector<std::string>& backends) {
  std::string text;
  for (const auto& name : backends) text += (text.empty() ? "" : ",") + name;
  return text;
}

const std::vector<std::string>& collectives_presets() {
  static const std::vector<std::string> kPresets = {"default", "quick"};
  return kPresets;
}

CollectivesSettings resolve_collectives_settings(const CollectivesFlags& flags) {
  const Preset preset = preset_named(flags.preset);
  CollectivesSettings settings;
  settings.preset = flags.preset;
  const std::uint64_t min_bytes =
      flags.min_bytes ? parse_bytes(*flags.min_bytes) : preset.min_bytes;
  const std::uint64_t max_bytes =
      flags.max_bytes ? parse_bytes(*flags.max_bytes) : preset.max_bytes;
  settings.sizes = doubling_sizes(min_bytes, max_bytes);

  settings.policy = preset.policy;
  if (flags.iters) settings.policy.iters = *flags.iters;
  if (flags.warmup) settings.policy.warmup = *flags.warmup;
  if (flags.min_iters) settings.policy.min_iters = *flags.min_iters;
  // An explicit --iters below the preset's floor lowers the floor too.
  settings.policy.min_iters = std::min(settings.policy.min_iters, settings.policy.iters);
  if (settings.policy.iters < 1 || settings.policy.warmup < 0 || settings.policy.min_iters < 1) {
    throw InvalidArgument("iterations must be positive and warm-up non-negative");
  }

  for (const auto& op : collective_ops()) {
    const bool wanted = flags.ops.empty() ||
                        std::find(flags.ops.begin(), flags.ops.end(), op.name) != flags.ops.end();
    if (wanted) settings.ops.push_back(op.name);
  }
  for (const auto& name : flags.ops) {
    if (std::find(settings.ops.begin(), settings.ops.end(), name) == settings.ops.end()) {
      throw InvalidArgument("unknown collective '" + name +
                            "': use allreduce, broadcast or allgather");
    }
  }
  settings.backends = resolve_backends(flags.backends);
  if (!flags.buffers.empty()) settings.buffers = flags.buffers;
  for (const auto& kind : settings.buffers) {
    if (kind != "ordinary" && kind != "shared") {
      throw InvalidArgument("unknown buffers '" + kind + "': use ordinary or shared");
    }
  }
  return settings;
}

}  // namespace gradwire::bench
