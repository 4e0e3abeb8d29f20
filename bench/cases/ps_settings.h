// What `gradwire-bench ps` runs: its flags, the presets, and the settings they resolve to (pure,
// unit-tested). The defaults: resnet18 on 64x64 synthetic images of 10 classes, 2 trainers of
// batch 8 and 2 parameter servers, sync, the servers running SGD lr 0.01 momentum 0.9, forward
// overlapped with the pulls; 5 warm-up iterations, then 3 passes of 10 (reference 003's "Pass = N"
// lines, after PaddlePaddle's parameter-server benchmark).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/options.h"

namespace gradwire::bench {

inline constexpr double kPsLearningRate = 0.01;
inline constexpr double kPsMomentum = 0.9;
// The plain step of --reference pytorch (cases/parity.h): on each side, the model trained in one
// process on trainer 0's batch (no servers); this many untimed iterations, then this many timed.
inline constexpr int kPsPlainWarmup = 3;
inline constexpr int kPsPlainIterations = 10;

// Who runs the optimizer (gradwire::ps::DenseRole): the servers (optimizer), or the trainers on
// the gradients the servers summed (sum, BytePS's summation role).
enum class PsRole { kOptimizer, kSum };
const char* to_string(PsRole role);

// How the servers apply pushes: --mode sync, async, or stale:K (async with bounded staleness K,
// DenseOptions::staleness; stale:0 is sync).
struct PsMode {
  bool sync = true;
  int staleness = 0;  // with sync false: 0 never waits, K >= 1 at most K steps ahead
};
// Pure: "sync", "async", "stale:K" (K >= 0). Throws InvalidArgument naming the text and the
// accepted forms otherwise.
PsMode parse_ps_mode(const std::string& text);
// Pure: the inverse ("sync", "async", "stale:2").
std::string to_string(const PsMode& mode);

// What runs; the defaults are the default preset's (ps_options() has the others').
struct PsSettings {
  std::string preset = "default";
  std::string model = "resnet18";
  int trainers = 2;
  int servers = 2;
  PsMode mode;
  PsRole role = PsRole::kOptimizer;
  std::int64_t batch_size = 8;  // images per trainer and iteration
  std::int64_t image_size = 64;
  std::int64_t num_classes = 10;
  int iterations = 10;  // per pass
  int warmup = 5;
  int passes = 3;
  std::uint64_t seed = 0;
  // The comparisons, each run after the parameter-server run of every repeat, in this order:
  // "ddp" (gradwire DDP, backend auto, same trainers), "local" (one process, no distribution).
  std::vector<std::string> compare;
  bool reference_pytorch = false;
  int repeat = 1;
  // Intra-op threads of every process (trainers, servers, the comparisons' processes); nullopt:
  // max(1, cores / the processes of that run).
  std::optional<int> threads;
  bool print_layout = false;
  std::string json_path;
  std::string html_path;
  // --trace DIR: the timeline of one measured repeat goes to DIR (docs/benchmarks.md, "--trace");
  // empty: no timeline.
  std::string trace_dir;
  std::string python;
  std::string reference_script;

  int measured_iterations() const { return iterations * passes; }
  bool compares(const std::string& name) const;
};

// The flags, their help and their defaults in each preset (docs/benchmarks.md):
//   default: resnet18, 64x64, batch 8, 2 trainers x 2 servers, 5 warm-up + 3 passes of 10
//   quick:   resnet18, 32x32, batch 2, 2 trainers x 2 servers, 1 warm-up + 2 passes of 2
OptionTable<PsSettings> ps_options();

// The models the PyTorch reference has (ps_reference.py).
const std::vector<std::string>& ps_reference_models();

// Pure: the table's settings, checked. Throws InvalidArgument for an unknown model, the summation
// role outside sync mode, or a reference the settings cannot have (a model it lacks, an image
// smaller than 32, async updates).
PsSettings resolve_ps_settings(const OptionTable<PsSettings>& options);

// Intra-op threads per process of each run: --threads, else max(1, cores / its processes).
struct PsThreads {
  int ps = 1;     // trainers and servers of the parameter-server run (T + S processes)
  int ddp = 1;    // the DDP comparison's trainers (T)
  int local = 1;  // the local comparison's one process
};
// Pure.
PsThreads ps_thread_counts(const PsSettings& settings, int cores);

// One line for stderr: "preset default: resnet18, 2 trainers x 2 servers, batch 8, ...".
std::string describe_ps_settings(const PsSettings& settings);

}  // namespace gradwire::bench
