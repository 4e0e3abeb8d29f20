// What `gradwire-bench ddp` runs: its flags, the presets, and the settings they resolve to (pure,
// unit-tested).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cases/training_case.h"
#include "harness/options.h"

namespace gradwire::bench {

// What runs; the defaults are the default preset's (ddp_options() has the others').
struct DdpSettings {
  std::string preset = "default";
  std::vector<std::string> models = {"resnet50", "resnet101", "resnext50_32x4d",
                                     "resnext101_32x8d"};
  std::int64_t batch_size = 32;
  std::int64_t image_size = 224;
  double bucket_cap_mb = 25;
  int iterations = 10;
  int warmup = 5;
  std::vector<int> world_sizes;  // ascending, distinct, each >= 1 (--world-sizes; empty: below)
  // The largest default world size when gradwire-bench starts the ranks: 1, 2, 4, ... up to it.
  int max_ranks = 2;
  int ranks = 1;  // processes the sweep needs: the largest world size
  // "cpu", or "cuda": each rank trains on its local rank's GPU; the backends default to, and must
  // be, nccl (--device).
  std::string device = "cpu";
  std::string json_path;
  std::string html_path;
  // --trace DIR: the timeline of one measured repeat goes to DIR (docs/benchmarks.md, "--trace");
  // empty: no timeline.
  std::string trace_dir;
  bool reference_pytorch = false;
  // The whole sweep (and the reference after it) runs this many times, alternating, and the
  // measurements of all repeats are pooled: noise on a shared machine hits both sides alike.
  int repeat = 1;
  // The "no ddp" baseline and DDP on 1 rank run in one process, alternating iteration by
  // iteration, so that DDP's overhead is measured under the same conditions as the baseline.
  bool interleave = false;
  // After the baseline, every rank of the largest world size trains without DDP at the same time,
  // as many independent trainings side by side: the pace no DDP over those ranks can beat on this
  // machine (cores, memory bandwidth and caches shared, uneven virtual CPUs). Ignored when no
  // world size exceeds 1.
  bool side_by_side = false;
  // DdpOptions::gradient_as_bucket_view (PyTorch's option of the same name for the reference).
  bool gradient_as_bucket_view = false;
  // DdpOptions::shared_buckets (no effect on the reference).
  bool shared_buckets = true;
  // Communicator backends and DDP comm hooks (ddp::make_comm_hook names): every DDP world size is
  // measured for each backend and hook, in that order, in the same run; the reference uses
  // PyTorch's Gloo (NCCL with --device cuda) and no hook. Empty: gloo, or nccl with --device cuda.
  std::vector<std::string> backends;
  std::vector<std::string> comm_hooks = {"allreduce"};
  std::string python;
  std::string reference_script;
};

// The flags, their help and their defaults in each preset (docs/benchmarks.md):
//   default: resnet50, resnet101, resnext50_32x4d, resnext101_32x8d; batch 32, 224x224,
//            5 warm-up + 10 timed iterations (PyTorch's benchmarks/distributed/ddp/benchmark.py)
//   quick:   resnet18 and cnn; batch 8, 64x64, 5 warm-up + 40 timed iterations
OptionTable<DdpSettings> ddp_options();

// Throws InvalidArgument naming the first name that is not in the model zoo, and the known ones.
void check_model_names(const std::vector<std::string>& names);

// Pure: 1, 2, 4, ... below max_ranks, then max_ranks itself (e.g. 6 -> 1, 2, 4, 6).
std::vector<int> default_world_sizes(int max_ranks);

// Pure. `job_world_size` is the size of the job this process already belongs to (gradwire-run,
// torchrun...), nullopt when gradwire-bench starts its own ranks: then world sizes default to
// default_world_sizes(max_ranks), otherwise to default_world_sizes(job size), and larger ones are
// an error. Throws InvalidArgument for an unknown model or comm hook, world sizes the job cannot
// provide, or a backend given twice.
DdpSettings resolve_ddp_settings(const OptionTable<DdpSettings>& options,
                                 std::optional<int> job_world_size);

// ddp's row of the training cases' table (training_case.h): name, help, title, columns and
// bench/reference/ddp_reference.py.
const TrainingFormat& ddp_format();

// One line describing the settings, for stderr: "models resnet18,cnn, batch 8, 64x64, ...".
std::string describe_ddp_settings(const DdpSettings& settings, int threads_per_rank);

}  // namespace gradwire::bench
