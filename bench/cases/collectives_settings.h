// What `gradwire-bench collectives` runs: its flags, the presets, and the settings they resolve to
// (pure, unit-tested).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/options.h"
#include "harness/timing.h"

namespace gradwire::bench {

// What runs; the sizes and the iteration policy come from collectives_options() (the policy's
// defaults are IterationPolicy's, its warm-up time and bytes per size the preset's).
struct CollectivesSettings {
  std::string preset = "default";
  std::uint64_t min_bytes = 0;
  std::uint64_t max_bytes = 0;
  std::vector<std::uint64_t> sizes;  // requested sizes, doubling from min_bytes to max_bytes
  IterationPolicy policy;
  std::vector<std::string> ops;  // names, in collective_ops() order (--ops; empty: all)
  // Communicator backends, measured one after the other in the same run, in the order given.
  std::vector<std::string> backends;
  // Where in-place operations' tensors live, each measured in turn per backend: "ordinary"
  // (at::zeros) or "shared" (Communicator::shared_buffer, which the shm backend allreduces in
  // place without copies; like nccl-tests' registered buffers).
  std::vector<std::string> buffers = {"ordinary"};
  // Where the tensors live: "cpu", or "cuda" (each rank's GPU is its local rank's; the backends
  // default to, and must be, nccl).
  std::string device = "cpu";
  std::string json_path;  // empty: no JSON
};

// The flags, their help and their defaults in each preset:
//   default: 8 B .. 256 MiB, 50 iterations (5 warm-up, and at least 20 ms), at least 3, 1 GiB
//            moved per size
//   quick:   8 B .. 16 MiB,  20 iterations (2 warm-up, and at least 5 ms), at least 3, 64 MiB
//            moved per size
OptionTable<CollectivesSettings> collectives_options();

// The backends a benchmark accepts in --backend (InitOptions::backend names).
const std::vector<std::string>& benchmark_backends();

// Pure: the --backend list of gradwire-bench collectives and ddp: `given` in order, or {"gloo"}
// when empty. Throws InvalidArgument for a name given twice.
std::vector<std::string> resolve_backends(const std::vector<std::string>& given);

// Pure: "gloo,shm".
std::string join_backends(const std::vector<std::string>& backends);

// Pure. Throws InvalidArgument for malformed sizes, min > max, a backend given twice, or a backend
// other than nccl with --device cuda.
CollectivesSettings resolve_collectives_settings(const OptionTable<CollectivesSettings>& options);

}  // namespace gradwire::bench
