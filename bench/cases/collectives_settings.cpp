#include "cases/collectives_settings.h"

#include <algorithm>

#include "cases/collective_ops.h"
#include "gradwire/common/error.h"
#include "harness/bandwidth.h"
#include "harness/table.h"

namespace gradwire::bench {

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

namespace {

// The names --ops accepts: the op table's, in its order.
std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const auto& op : collective_ops()) names.push_back(op.name);
  return names;
}

}  // namespace

const OptionTable<CollectivesFlags, CollectivesSettings>& collectives_options() {
  using Flags = CollectivesFlags;
  using Settings = CollectivesSettings;
  using Policy = IterationPolicy;
  constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
  static const auto table = [] {
    OptionTable<Flags, Settings> options({"default", "quick"}, "size and iteration preset");
    options
        .preset_option<std::string>(
            "-b,--min-bytes", &Flags::min_bytes, {"8"}, "smallest size, e.g. 8, 64K",
            [](Settings& s, const std::string& text) { s.min_bytes = parse_bytes(text); })
        .preset_option<std::string>(
            "-e,--max-bytes", &Flags::max_bytes, {"256M", {{"quick", "16M"}}},
            "largest size, e.g. 4096, 256M",
            [](Settings& s, const std::string& text) { s.max_bytes = parse_bytes(text); })
        .preset_option<int>(
            "-n,--iters", &Flags::iters, {Policy{}.iters, {{"quick", 20}}},
            "timed iterations for small sizes; large sizes get fewer",
            [](Settings& s, const int& iters) { s.policy.iters = iters; }, positive_number)
        .preset_option<int>(
            "-w,--warmup", &Flags::warmup, {Policy{}.warmup, {{"quick", 2}}},
            "warm-up iterations for small sizes",
            [](Settings& s, const int& warmup) { s.policy.warmup = warmup; }, non_negative_number)
        .preset_option<int>(
            "--min-iters", &Flags::min_iters, {Policy{}.min_iters},
            "timed iterations at least, even for the largest sizes",
            [](Settings& s, const int& min_iters) { s.policy.min_iters = min_iters; },
            positive_number)
        .preset_setting<std::uint64_t>(
            {Policy{}.bytes_per_size, {{"quick", 64 * kMiB}}},
            [](Settings& s, const std::uint64_t& bytes) { s.policy.bytes_per_size = bytes; })
        .preset_setting<double>(
            {0.02, {{"quick", 0.005}}},
            [](Settings& s, const double& seconds) { s.policy.min_warmup_seconds = seconds; })
        .option(
            "--ops", &Flags::ops, "collectives to run [all]",
            [](CLI::Option& option) { option.delimiter(',')->check(CLI::IsMember(op_names())); })
        .option("--backend", &Flags::backends,
                "communicator backends, measured one after the other in one run, e.g. "
                "gloo,shm [gloo]",
                [](CLI::Option& option) {
                  option.delimiter(',')->check(CLI::IsMember(benchmark_backends()));
                })
        .option("--buffers", &Flags::buffers,
                "where allreduce/broadcast tensors live, each measured in turn: ordinary, "
                "shared (Communicator::shared_buffer; the shm backend reduces them in place) "
                "[ordinary]",
                [](CLI::Option& option) {
                  option.delimiter(',')->check(CLI::IsMember({"ordinary", "shared"}));
                })
        .option("--json", &Flags::json_path, "write the results to this JSON file");
    return options;
  }();
  return table;
}

CollectivesSettings resolve_collectives_settings(const CollectivesFlags& flags) {
  CollectivesSettings settings = collectives_options().resolve(flags);
  settings.sizes = doubling_sizes(settings.min_bytes, settings.max_bytes);
  // An explicit --iters below the preset's floor lowers the floor too.
  settings.policy.min_iters = std::min(settings.policy.min_iters, settings.policy.iters);

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
