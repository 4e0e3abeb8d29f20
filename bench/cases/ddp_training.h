// One configuration of `gradwire-bench ddp` or `reducers` on one rank: build the model, generate
// one random batch, and time training iterations (zero_grad, forward, cross-entropy on random
// labels, backward, SGD step), through DistributedDataParallel or, for the "no ddp" baseline,
// without.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gradwire/comm/communicator.h"
#include "gradwire/ddp/ddp.h"

namespace gradwire::bench {

struct TrainingSetup {
  std::string model;              // a zoo name
  std::int64_t image_size = 224;  // ModelConfig::image_size (the ResNets)
  std::int64_t batch_size = 32;   // examples per rank and iteration
  int warmup = 5;                 // untimed iterations first
  int iterations = 10;            // timed iterations
  double bucket_cap_mb = 25;      // DdpOptions::bucket_cap_mb
  // DdpOptions::schedule (gradwire-bench reducers compares them).
  ddp::ReductionSchedule schedule = ddp::ReductionSchedule::kOverlapped;
};

// Per timed iteration, in order: the whole step (zero_grad to the optimizer step), its forward
// (the model and the loss) and its backward (loss.backward(), which includes DDP's reduction).
struct TrainingMeasurement {
  std::vector<double> seconds;
  std::vector<double> forward_seconds;
  std::vector<double> backward_seconds;
  bool ddp = false;
  ddp::DdpStats stats;  // over the timed iterations; meaningful when ddp
};

// Trains `setup.model` on this rank. `communicator` null: plain training (the "no ddp"
// baseline); otherwise DDP over it (collective: every member calls it with the same setup).
// Seeds torch's generator with `seed` first (upstream seeds with the rank), so the data differs
// between ranks; DDP's construction broadcasts rank 0's parameters. Blocks; throws what the model
// or DDP throws.
TrainingMeasurement train_and_time(const TrainingSetup& setup,
                                   const std::shared_ptr<Communicator>& communicator,
                                   std::uint64_t seed);

// DdpOptions the benchmark uses: bucket_cap_mb and schedule from the setup (a cap below 1 MiB
// also caps the first bucket) and broadcast_buffers false (as upstream's benchmark); everything
// else gradwire's defaults.
ddp::DdpOptions benchmark_ddp_options(const TrainingSetup& setup);

// Every member's samples, rank 0's first (an allgather; collective over `communicator`, and
// every member must pass as many samples).
std::vector<double> gather_samples(Communicator& communicator, const std::vector<double>& samples);

// The DDP statistics for the JSON: averages in seconds and the bucket layout (bytes per bucket).
nlohmann::json to_json(const ddp::DdpStats& stats);

}  // namespace gradwire::bench
