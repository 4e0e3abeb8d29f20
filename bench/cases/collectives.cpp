// `gradwire-bench collectives`: allreduce, broadcast and allgather over doubling sizes, each rank
// timing every iteration; reports the slowest rank per iteration as nccl-tests does. With several
// backends (--backend gloo,shm) every op is measured on each, one after the other, in one run.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <functional>
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
#include "harness/case.h"
#include "harness/host_collectives.h"
#include "harness/ranks.h"
#include "harness/report.h"
#include "harness/table.h"
#include "harness/timing.h"
#include "subcommand.h"

namespace gradwire::bench {

namespace {

// Sizes at or above this get a progress line on stderr (they take long enough to wonder).
constexpr std::uint64_t kProgressBytes = std::uint64_t{16} << 20;

// The slowest rank's time for each iteration.
std::vector<double> slowest_rank_seconds(Communicator& communicator,
                                         const std::vector<double>& seconds) {
  const at::Tensor times = host_allreduce(
      communicator, at::tensor(at::ArrayRef<double>(seconds), at::kDouble), ReduceOp::kMax);
  return std::vector<double>(times.data_ptr<double>(), times.data_ptr<double>() + times.numel());
}

std::int64_t sum_over_ranks(Communicator& communicator, std::int64_t value) {
  return host_allreduce(communicator, at::full({1}, value, at::kLong), ReduceOp::kSum)
      .item<std::int64_t>();
}

// `buffers` as they are when already on `device`, else copies there.
CollectiveBuffers on(const CollectiveBuffers& buffers, const at::Device& device) {
  if (buffers.input.device() == device) return buffers;
  return {buffers.input.to(device),
          buffers.output.defined() ? buffers.output.to(device) : at::Tensor()};
}

// Runs `counts.warmup` untimed iterations, then more in doubling batches until the slowest rank
// has spent `policy.min_warmup_seconds` warming up (at most 100000 iterations); every rank runs the
// same number, agreed by a max-allreduce of each batch's time. Returns how many ran.
int warm_up(Communicator& communicator, const IterationPolicy& policy,
            const IterationCounts& counts, const std::function<void()>& body) {
  constexpr int kMostIterations = 100000;
  int done = 0;
  double spent = 0.0;
  for (int batch = counts.warmup; batch > 0;) {
    const Stopwatch clock;
    for (int i = 0; i < batch; ++i) body();
    spent += host_allreduce(communicator, at::full({1}, clock.seconds(), at::kDouble),
                            ReduceOp::kMax)
                 .item<double>();
    done += batch;
    if (spent >= policy.min_warmup_seconds) break;
    batch = std::min(done, kMostIterations - done);
  }
  return done;
}

// Checks one execution against the expected values, then times warm-up + timed iterations.
std::optional<CollectiveRow> measure_size(RankContext& context, Communicator& communicator,
                                          const CollectiveOp& op, double bus_factor,
                                          std::uint64_t requested_bytes,
                                          std::uint64_t previous_bytes,
                                          const IterationPolicy& policy, bool shared_buffers) {
  const int ranks = communicator.size();
  const std::int64_t count = op.input_count(requested_bytes, ranks);
  const std::uint64_t bytes = op.reported_bytes(count, ranks);
  if (bytes == previous_bytes) return std::nullopt;  // rounding gave the same size again
  IterationCounts iterations = iterations_for_size(policy, bytes);
  if (context.reports() && bytes >= kProgressBytes) {
    std::cerr << "gradwire-bench: " << communicator.backend() << " " << op.name << " "
              << format_bytes(bytes) << ": at least " << iterations.warmup << " warm-up + "
              << iterations.timed << " timed iterations" << std::endl;
  }
  // Filled and checked on the CPU (`host`), issued on the communicator's device (`buffers`).
  CollectiveBuffers host = op.allocate(count, ranks);
  if (shared_buffers) {
    host.input = communicator.shared_buffer(count, host.input.scalar_type());
  }
  op.fill(host, communicator.rank());
  CollectiveBuffers buffers = on(host, communicator.device());
  op.issue(communicator, buffers)->wait();
  const CollectiveBuffers result = on(buffers, at::kCPU);
  const std::int64_t wrong =
      sum_over_ranks(communicator, op.count_wrong(result, communicator.rank(), ranks));
  // A timeout given to wait() blocks the host until the operation has finished, on CUDA too (a
  // wait without one only orders the current stream), so each iteration is timed to its end.
  auto once = [&] { op.issue(communicator, buffers)->wait(communicator.timeout()); };
  iterations.warmup = warm_up(communicator, policy, iterations, once);
  const std::vector<double> seconds = time_iterations({0, iterations.timed}, once);
  return make_collective_row(bytes, count, iterations, slowest_rank_seconds(communicator, seconds),
                             bus_factor, wrong);
}

// Every size of `op` on `measured`, printed as it goes on rank 0.
CollectiveResult measure_op(RankContext& context, Communicator& measured, const CollectiveOp& op,
                            const CollectivesSettings& settings, bool shared_buffers,
                            double memcpy_gbps, std::int64_t& total_wrong) {
  const bool reports = context.reports();
  CollectiveResult result{
      op.name, op.detail,          bus_bandwidth_factor(op.kind, measured.size()),
      {},      measured.backend(), shared_buffers};
  if (reports) print_collective_title(std::cout, result, measured.size());
  std::uint64_t previous_bytes = 0;
  for (const std::uint64_t size : settings.sizes) {
    auto row = measure_size(context, measured, op, result.bus_factor, size, previous_bytes,
                            settings.policy, shared_buffers);
    if (!row) continue;
    previous_bytes = row->bytes;
    total_wrong += row->wrong;
    if (reports) print_collective_row(std::cout, *row, memcpy_gbps);
    result.rows.push_back(*row);
  }
  if (reports) print_collective_footer(std::cout, result, memcpy_gbps);
  return result;
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
      for (const auto& kind : settings.buffers) {
        // Shared buffers matter only where the operation works in place on one tensor.
        if (kind == "shared" && !op.in_place) continue;
        results.push_back(measure_op(context, *world.communicator, op, settings, kind == "shared",
                                     metadata.memcpy_gbps, total_wrong));
      }
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
  return case_subcommand<CollectivesSettings>(
      "collectives",
      "allreduce, broadcast and allgather bandwidth over message sizes (nccl-tests style)",
      collectives_options, add_rank_options,
      [](const auto& options, RankOptions ranks, const std::vector<std::string>& argv) {
        const CollectivesSettings settings = resolve_collectives_settings(options);
        if (!ranks.worker) prepare_output_files({settings.json_path});
        ranks.backend = settings.backends.front();
        return run_on_ranks(ranks, argv, [&](RankContext& context) {
          return run_collectives(context, settings, settings.json_path, argv, ranks.timeout);
        });
      });
}

}  // namespace gradwire::bench
