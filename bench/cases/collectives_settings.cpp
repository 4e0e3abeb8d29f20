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
  for (auto name = given.begin(); name != given.end(); ++name) {
    if (std::find(given.begin(), name, *name) != name) {
      throw InvalidArgument("backend '" + *name + "' is given twice in --backend");
    }
  }
  return given;
}

std::string join_backends(const std::vector<std::string>& backends) { return join(backends, ","); }

OptionTable<CollectivesSettings> collectives_options() {
  using Settings = CollectivesSettings;
  using Policy = IterationPolicy;
  constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
  std::vector<std::string> ops;
  for (const auto& op : collective_ops()) ops.push_back(op.name);
  OptionTable<Settings> options({"default", "quick"}, "size and iteration preset");
  options
      .preset_option<std::string>(
          "-b,--min-bytes", {"8"}, "smallest size, e.g. 8, 64K",
          [](Settings& s, const std::string& text) { s.min_bytes = parse_bytes(text); })
      .preset_option<std::string>(
          "-e,--max-bytes", {"256M", {{"quick", "16M"}}}, "largest size, e.g. 4096, 256M",
          [](Settings& s, const std::string& text) { s.max_bytes = parse_bytes(text); })
      .preset_option<int>(
          "-n,--iters", {Policy{}.iters, {{"quick", 20}}},
          "timed iterations for small sizes; large sizes get fewer",
          [](Settings& s, const int& iters) { s.policy.iters = iters; }, positive_number)
      .preset_option<int>(
          "-w,--warmup", {Policy{}.warmup, {{"quick", 2}}}, "warm-up iterations for small sizes",
          [](Settings& s, const int& warmup) { s.policy.warmup = warmup; }, non_negative_number)
      .preset_option<int>(
          "--min-iters", {Policy{}.min_iters},
          "timed iterations at least, even for the largest sizes",
          [](Settings& s, const int& min_iters) { s.policy.min_iters = min_iters; },
          positive_number)
      .preset_setting<std::uint64_t>(
          {Policy{}.bytes_per_size, {{"quick", 64 * kMiB}}},
          [](Settings& s, const std::uint64_t& bytes) { s.policy.bytes_per_size = bytes; })
      .preset_setting<double>(
          {0.02, {{"quick", 0.005}}},
          [](Settings& s, const double& seconds) { s.policy.min_warmup_seconds = seconds; })
      .option<std::vector<std::string>>(
          "--ops", "collectives to run [all]",
          [ops](Settings& s, const std::vector<std::string>& wanted) {
            s.ops = chosen_in_order(wanted, ops);
          },
          names_from(ops))
      .option("--backend", &Settings::backends,
              "communicator backends, measured one after the other in one run, e.g. "
              "gloo,shm [gloo]",
              names_from(benchmark_backends()))
      .option("--buffers", &Settings::buffers,
              "where allreduce/broadcast tensors live, each measured in turn: ordinary, "
              "shared (Communicator::shared_buffer; the shm backend reduces them in place) "
              "[ordinary]",
              names_from({"ordinary", "shared"}))
      .option("--device", &Settings::device,
              "where the tensors live: cpu, or cuda (one GPU per rank, the nccl backend) [cpu]",
              names_from({"cpu", "cuda"}))
      .option("--json", &Settings::json_path, "write the results to this JSON file");
  return options;
}

CollectivesSettings resolve_collectives_settings(const OptionTable<CollectivesSettings>& options) {
  CollectivesSettings settings = options.resolve();
  settings.sizes = doubling_sizes(settings.min_bytes, settings.max_bytes);
  // An explicit --iters below the preset's floor lowers the floor too.
  settings.policy.min_iters = std::min(settings.policy.min_iters, settings.policy.iters);
  if (settings.device == "cuda") {
    if (settings.backends.empty()) settings.backends = {"nccl"};
    for (const auto& backend : settings.backends) {
      if (backend != "nccl") {
        throw InvalidArgument("--device cuda takes the nccl backend, not '" + backend + "'");
      }
    }
    for (const auto& kind : settings.buffers) {
      if (kind == "shared") throw InvalidArgument("--buffers shared are CPU memory: not with --device cuda");
    }
  }
  settings.backends = resolve_backends(settings.backends);
  return settings;
}

}  // namespace gradwire::bench
