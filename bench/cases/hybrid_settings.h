// What `gradwire-bench hybrid` runs: its flags, the presets, and the settings they resolve to
// (pure, unit-tested). The defaults are PyTorch's DDP + RPC benchmark's (PyTorch's
// benchmark_ddp_rpc.py): 8 trainers, 8 parameter servers, an EmbeddingBag of 300 rows x 64 per
// server, 5 warm-up + 100 measured epochs of 10 batches, SGD lr 0.05.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/options.h"

namespace gradwire::bench {

// The model's fixed parts (PyTorch's DDP + RPC benchmark's).
inline constexpr int kHybridClasses = 8;
inline constexpr std::int64_t kHybridMinIds = 20;  // ids per batch: uniform in [20, 50]
inline constexpr std::int64_t kHybridMaxIds = 50;
inline constexpr std::int64_t kHybridMaxBag = 10;  // ids per bag (offset step): [1, 10]
inline constexpr double kHybridLearningRate = 0.05;
// The plain step of --reference pytorch (cases/parity.h): on each side, the model held in one
// process and trained on trainer 0's batches, an epoch (--batches batches) per step; this many
// untimed epochs, then this many timed.
inline constexpr int kHybridPlainWarmup = 3;
inline constexpr int kHybridPlainEpochs = 20;

enum class HybridMode { kAsync, kSync };
const char* to_string(HybridMode mode);

// What runs; the defaults are the default preset's (hybrid_options() has the others').
struct HybridSettings {
  std::string preset = "default";
  int trainers = 8;
  int servers = 8;
  std::int64_t rows = 300;
  std::int64_t dim = 64;  // per server; the embedding is servers x dim wide
  int epochs = 100;
  int warmup = 5;
  int batches = 10;
  std::uint64_t seed = 0;
  HybridMode mode = HybridMode::kAsync;
  // As the library's "auto" chooses: "shm" when the bench starts its own trainers (all on this
  // host); "auto" inside a job (the job's hosts decide); or the backend named by --backend.
  std::string backend = "shm";
  int server_threads = 1;  // one thread per process, as PyTorch's benchmark
  // Processes hosting the servers (LaunchOptions::server_processes): 0 = gradwire-run's rule
  // (one per server unless trainers + servers exceed the cores).
  int server_processes = 0;
  // ClientOptions::defer_pushes: the pushes travel with the trainer's next call to each server
  // (in sync mode the step: one round trip instead of two), and the bench leaves out its flush()
  // after backward (docs/ps.md "Batched calls").
  bool defer_pushes = false;
  std::string json_path;
  std::string html_path;
  // --trace DIR: the timeline of one measured repeat goes to DIR (docs/benchmarks.md, "--trace");
  // empty: no timeline.
  std::string trace_dir;
  bool reference_pytorch = false;
  int repeat = 1;
  std::string python;
  std::string reference_script;

  // Width of the concatenated lookups, the dense part's input.
  std::int64_t embedding_width() const { return static_cast<std::int64_t>(servers) * dim; }
};

// The flags, their help and their defaults in each preset (docs/benchmarks.md):
//   default: 8 trainers x 8 servers, 5 warm-up + 100 epochs (PyTorch's DDP + RPC benchmark)
//   quick:   2 trainers x 8 servers, 2 warm-up + 20 epochs
OptionTable<HybridSettings> hybrid_options();

// Pure. `job` describes the job this process already belongs to (gradwire-run --servers): its
// trainers (WORLD_SIZE) and servers (entries of GRADWIRE_PS_ADDRS); nullopt when gradwire-bench
// starts its own processes. In a job the counts come from the job: --trainers/--servers that
// disagree, --reference and --repeat are InvalidArgument.
struct HybridJob {
  int trainers = 1;
  int servers = 1;
};
HybridSettings resolve_hybrid_settings(const OptionTable<HybridSettings>& options,
                                       std::optional<HybridJob> job);

// One line for stderr: "8 trainers x 8 servers, 300 rows x 64 per server, ...".
std::string describe_hybrid_settings(const HybridSettings& settings);

}  // namespace gradwire::bench
