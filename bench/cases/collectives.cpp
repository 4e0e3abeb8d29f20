// `gradwire-bench collectives`: allreduce, broadcast and allgather over doubling sizes, each rank
// timing every iteration; reports the slowest rank per iteration as nccl-tests does. With several
// backends (--backend gloo,shm) every op is measured on each, one after the other, in one run.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include "cases/backend_worlds.h"
#include "cases/collective_ops.h"
#include "cases/collectives_report.h"
#include "cases/collectives_settings.h"
#include "gradwire/comm/world.h"
#include "gradwire/common/version.h"
#include "harness/bandwidth.h"
#include "harness/ranks.h"
#include "harness/report.h"
#include "harness/table.h"
#include "harness/timing.h"
#include "subcommand.h"

namespace gradwire::bench {

namespace {

// The names --ops accepts: the op table's, in its order.
std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const auto& op : collective_ops()) names.push_back(op.name);
  return names;
}

// Sizes at or above this get a progress line on stderr (they take long enough to wonder).
constexpr std::uint64_t kProgressBytes = std::uint64_t{16} << 20;

// The slowest rank's time for each iteration.
std::vector<double> slowest_rank_seconds(Communicator& communicator,
                                         const std::vector<double>& seconds) {
  at::Tensor times = at::tensor(at::ArrayRef<double>(seconds), at::kDouble);
  communicator.allreduce(times, ReduceOp::kMax)->wait();
  return std::vector<double>(times.data_ptr<double>(), times.data_ptr<double>() + times.numel());
}

std::int64_t sum_over_ranks(Communicator& communicator, std::int64_t value) {
  at::Tensor total = at::full({1}, value, at::kLong);
  communicator.allreduce(total, ReduceOp::kSum)->wait();
  return total.item<std::int64_t>();
}

// Checks one execution against the expected values, then times warm-up + timed iterations.
std::optional<CollectiveRow> measure_size(RankContext& context, Communicator& communicator,
                                          const CollectiveOp& op, double bus_factor,
                                          std::uint64_t requested_bytes,
                                          std::uint64_t previous_bytes,
                                          const IterationPolicy& policy) {
  const int ranks = communicator.size();
  const std::int64_t count = op.input_count(requested_bytes, ranks);
  const std::uint64_t bytes = op.reported_bytes(count, ranks);
  if (bytes == previous_bytes) return std::nullopt;  // rounding gave the same size again
  const IterationCounts iterations = iterations_for_size(policy, bytes);
  if (context.reports() && bytes >= kProgressBytes) {
    std::cerr << "gradwire-bench: " << communicator.backend() << " " << op.name << " "
              << format_bytes(bytes) << ": " << iterations.warmup << " warm-up + "
              << iterations.timed << " timed iterations" << std::endl;
  }
  CollectiveBuffers buffers = op.allocate(count, ranks);
  op.fill(buffers, communicator.rank());
  op.issue(communicator, buffers)->wait();
  const std::int64_t wrong =
      sum_over_ranks(communicator, op.count_wrong(buffers, communicator.rank(), ranks));
  const std::vector<double> seconds =
      time_iterations(iterations, [&] { op.issue(communicator, buffers)->wait(); });
  return make_collective_row(bytes, count, iterations, slowest_rank_seconds(communicator, seconds),
                             bus_factor, wrong);
}

int run_collectives(RankContext& context, const CollectivesSettings& settings,
                    const std::string& json_path, const std::vector<std::string>& argv,
                    std::optional<std::chrono::milliseconds> timeout) {
  Communicator& communicator = context.communicator;
  const bool reports = context.reports();
  const std::vector<BackendWorld> worlds = join_backend_worlds(context, settings.backends, timeout);
  std::vector<std::string> backends;
  for (const auto& world : worlds) backends.push_back(world.communicator->backend());
  RunMetadata metadata = run_metadata(context, argv);
  metadata.backend = join_backends(backends);
  // Rank 0 measures the memcpy reference while the others wait, so nothing competes with it.
  if (reports) metadata.memcpy_gbps = measure_memcpy_bandwidth();
  communicator.barrier()->wait();
  if (reports) print_collectives_header(std::cout, metadata);

  std::vector<CollectiveResult> results;
  std::int64_t total_wrong = 0;
  for (const auto& op : collective_ops()) {
    if (std::find(settings.ops.begin(), settings.ops.end(), op.name) == settings.ops.end()) {
      continue;
    }
    for (const auto& world : worlds) {
      Communicator& measured = *world.communicator;
      CollectiveResult result{op.name,
                              op.detail,
                              bus_bandwidth_factor(op.kind, measured.size()),
                              {},
                              measured.backend()};
      if (reports) print_collective_title(std::cout, result, measured.size());
      std::uint64_t previous_bytes = 0;
      for (const std::uint64_t size : settings.sizes) {
        auto row = measure_size(context, measured, op, result.bus_factor, size, previous_bytes,
                                settings.policy);
        if (!row) continue;
        previous_bytes = row->bytes;
        total_wrong += row->wrong;
        if (reports) print_collective_row(std::cout, *row, metadata.memcpy_gbps);
        result.rows.push_back(*row);
      }
      if (reports) print_collective_footer(std::cout, result, metadata.memcpy_gbps);
      results.push_back(std::move(result));
    }
  }
  if (!reports) return 0;  // rank 0 reports failures; others exiting non-zero would stop it

  if (!json_path.empty()) {
    write_json_file(json_path, collectives_document(metadata, settings, results));
    std::cerr << "gradwire-bench: wrote " << json_path << std::endl;
  }
  if (total_wrong > 0) {
    std::cerr << "gradwire-bench: " << total_wrong
              << " wrong values: the communicator returned incorrect results" << std::endl;
    return 1;
  }
  return 0;
}

}  // namespace

Subcommand collectives_subcommand() {
  Subcommand subcommand;
  subcommand.name = "collectives";
  subcommand.description =
      "allreduce, broadcast and allgather bandwidth over message sizes (nccl-tests style)";
  subcommand.attach = [](CLI::App& command) -> SubcommandRun {
    struct State {
      CollectivesFlags flags;
      RankOptions ranks;
    };
    auto state = std::make_shared<State>();
    command.add_option("--preset", state->flags.preset, "size and iteration preset")
        ->check(CLI::IsMember(collectives_presets()))
        ->capture_default_str();
    command.add_option("-b,--min-bytes", state->flags.min_bytes,
                       "smallest size, e.g. 8, 64K [preset: 8]");
    command.add_option("-e,--max-bytes", state->flags.max_bytes,
                       "largest size, e.g. 4096, 256M [default 256M, quick 16M]");
    command
        .add_option("-n,--iters", state->flags.iters,
                    "timed iterations for small sizes; large sizes get fewer [default 50, "
                    "quick 20]")
        ->check(CLI::PositiveNumber);
    command
        .add_option("-w,--warmup", state->flags.warmup,
                    "warm-up iterations for small sizes [default 5, quick 2]")
        ->check(CLI::NonNegativeNumber);
    command
        .add_option("--min-iters", state->flags.min_iters,
                    "timed iterations at least, even for the largest sizes [3]")
        ->check(CLI::PositiveNumber);
    command.add_option("--ops", state->flags.ops, "collectives to run [all]")
        ->delimiter(',')
        ->check(CLI::IsMember(op_names()));
    command
        .add_option("--backend", state->flags.backends,
                    "communicator backends, measured one after the other in one run, e.g. "
                    "gloo,shm [gloo]")
        ->delimiter(',')
        ->check(CLI::IsMember(benchmark_backends()));
    command.add_option("--json", state->flags.json_path, "write the results to this JSON file");
    add_rank_options(command, state->ranks);
    return [state](const std::vector<std::string>& argv) {
      const CollectivesSettings settings = resolve_collectives_settings(state->flags);
      RankOptions ranks = state->ranks;
      ranks.backend = settings.backends.front();
      return run_on_ranks(ranks, argv, [&](RankContext& context) {
        return run_collectives(context, settings, state->flags.json_path, argv, ranks.timeout);
      });
    };
  };
  return subcommand;
}

}  // namespace gradwire::bench
