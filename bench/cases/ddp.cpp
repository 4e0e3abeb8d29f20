// `gradwire-bench ddp`: training iteration time of DistributedDataParallel, as PyTorch's
// benchmarks/distributed/ddp/benchmark.py measures it. Per model: a "no ddp" baseline on rank 0,
// then DDP over ranks 0..n-1 for each world size n (the other ranks wait); every member's
// per-iteration times are gathered to rank 0, which prints p50/p75/p90/p95 rows and writes the
// JSON. Optionally the same sweep with PyTorch's own DDP (ddp_reference.h). Its entry in the
// training cases' table (training_case.h) runs on its own ranks: every rank is one job that
// sweeps its world sizes on subgroups, and the results keep PyTorch's benchmark.py format, which
// PyTorch's diff.py reads. With several backends
// or comm hooks (--backend gloo,shm --comm-hook allreduce,bf16) each DDP world size is measured
// for every combination, against the same baseline, in the same run.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cases/ddp_settings.h"
#include "cases/ddp_sweep.h"
#include "cases/ddp_trace.h"
#include "gradwire/common/env.h"
#include "gradwire/common/launcher_env.h"
#include "harness/case.h"
#include "harness/ranks.h"
#include "harness/report.h"
#include "harness/traces.h"
#include "subcommand.h"

namespace gradwire::bench {

Subcommand ddp_subcommand() {
  TrainingCase<DdpSettings> entry;
  entry.format = ddp_format();
  entry.options = ddp_options;
  entry.resolve = [](const OptionTable<DdpSettings>& options, std::optional<JobShape> job) {
    return resolve_ddp_settings(options, job ? std::optional<int>(job->trainers) : std::nullopt);
  };
  entry.rank_flags = [](CLI::App& command, RankOptions& ranks) {
    command
        .add_option("--threads", ranks.threads_per_rank,
                    "intra-op threads per rank [cores / local ranks]")
        ->check(CLI::PositiveNumber);
    // Unbound by default: DDP's reductions run on a progress thread beside the compute thread,
    // and a rank bound to one core must time-share it (docs/performance.md).
    ranks.bind_cores = false;
    add_timeout_option(command, ranks);
    add_bind_cores_flag(command, ranks);
    add_worker_flag(command, ranks);
  };
  entry.run = [](const DdpSettings& settings, RankOptions ranks,
                 const std::vector<std::string>& argv) {
    if (!ranks.worker) {
      prepare_output_files({settings.json_path, settings.html_path});
      if (settings.reference_pytorch && !settings.json_path.empty()) {
        prepare_output_file(reference_json_path(settings.json_path));
      }
    }
    ranks.ranks = settings.ranks;
    ranks.backend = settings.backends.front();
    if (!ranks.timeout) ranks.timeout = kTrainingTimeout;
    // --trace: this process starts the ranks, and its launcher merges their timelines.
    const std::string trace_name = ddp_trace_name(settings);
    if (!settings.trace_dir.empty() && !ranks.worker &&
        !in_launcher_environment(EnvMap::from_process())) {
      prepare_trace_dir(settings.trace_dir);
      ranks.timeline = trace_file(settings.trace_dir, trace_name);
    }
    const int code = run_on_ranks(ranks, argv, [&](RankContext& context) {
      return run_ddp_sweep(context, settings, argv, ranks.timeout);
    });
    if (code == 0 && !ranks.timeline.empty()) add_ddp_trace(settings, trace_name, ranks.timeline);
    return code;
  };
  return training_subcommand(entry);
}

}  // namespace gradwire::bench
