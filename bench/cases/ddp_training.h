// One configuration of `gradwire-bench ddp` or `reducers` on one rank: build the model, generate
// one random batch, and time training iterations (zero_grad, forward, cross-entropy on random
// labels, backward, SGD step), through DistributedDataParallel or, for the "no ddp" baseline,
// without.
#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/sgd.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cases/trainer_results.h"
#include "gradwire/comm/communicator.h"
#include "gradwire/ddp/ddp.h"

namespace gradwire::bench {

struct TrainingSetup {
  std::string model;                // a zoo name
  std::int64_t image_size = 224;    // ModelConfig::image_size (the ResNets)
  std::int64_t batch_size = 32;     // examples per rank and iteration
  std::int64_t num_classes = 1000;  // ModelConfig::num_classes (the ResNets and VGGs)
  int warmup = 5;                   // untimed iterations first
  int iterations = 10;              // timed iterations
  double bucket_cap_mb = 25;        // DdpOptions::bucket_cap_mb
  // DdpOptions::schedule (gradwire-bench reducers compares them).
  ddp::ReductionSchedule schedule = ddp::ReductionSchedule::kOverlapped;
  bool gradient_as_bucket_view = false;  // DdpOptions::gradient_as_bucket_view
  bool shared_buckets = true;            // DdpOptions::shared_buckets
  std::string comm_hook = "allreduce";   // DdpOptions::comm_hook, by ddp::make_comm_hook name
  // Where the model, its batch and its buckets live; a CUDA iteration ends when its kernels have.
  std::string device = "cpu";
  // The SGD optimizer (upstream's by default: lr 0.001, momentum 0.9, weight decay 1e-4).
  double lr = 0.001;
  double momentum = 0.9;
  double weight_decay = 1e-4;
};

// A zoo model with one random batch for it, made before any clock: torch's generator seeded with
// `seed` (upstream seeds with the rank: the data differs between ranks, and two calls with one
// seed give the same), then setup.model (image_size, num_classes), the images (randn) and the
// labels (randint).
struct SyntheticTraining {
  torch::nn::Sequential model{nullptr};
  torch::Tensor input;
  torch::Tensor target;
};
SyntheticTraining make_synthetic_training(const TrainingSetup& setup, std::uint64_t seed);

// The setup's SGD: lr, momentum, weight_decay.
torch::optim::SGDOptions sgd_options(const TrainingSetup& setup);

// Per timed iteration, in order: the whole step (zero_grad to the optimizer step), its forward
// (the model and the loss) and its backward (loss.backward(), which includes DDP's reduction).
struct TrainingMeasurement {
  std::vector<double> seconds;
  std::vector<double> forward_seconds;
  std::vector<double> backward_seconds;
  // With an alternating timeline, one per iteration (AlternationProbe::end); empty otherwise.
  std::vector<double> timeline_recorded;
  bool ddp = false;
  ddp::DdpStats stats;  // over the timed iterations; meaningful when ddp
};

// Trains `setup.model` on this rank: setup.warmup untimed, then setup.iterations timed
// iterations. Blocks; throws what the model or DDP throws.
TrainingMeasurement train_and_time(const TrainingSetup& setup,
                                   const std::shared_ptr<Communicator>& communicator,
                                   std::uint64_t seed);

// The "no ddp" baseline and DDP over `one_rank` (a communicator of this rank alone), in the same
// process and alternating iteration by iteration (baseline, DDP, baseline, ...), so that both see
// the same machine: on a noisy one, DDP's overhead is otherwise lost in the drift between two
// runs. Both start from the same seed, hence the same model and data. Returns {baseline, DDP}.
std::pair<TrainingMeasurement, TrainingMeasurement> train_and_time_interleaved(
    const TrainingSetup& setup, const std::shared_ptr<Communicator>& one_rank, std::uint64_t seed);

// DdpOptions the benchmark uses: bucket_cap_mb, schedule, gradient_as_bucket_view and comm_hook
// from the setup
// (a cap below 1 MiB also caps the first bucket) and broadcast_buffers false (as upstream's
// benchmark); everything else gradwire's defaults.
ddp::DdpOptions benchmark_ddp_options(const TrainingSetup& setup);

// Every member's samples, rank 0's first (an allgather; collective over `communicator`, and
// every member must pass as many samples).
std::vector<double> gather_samples(Communicator& communicator, const std::vector<double>& samples);

// Every trainer's samples at every trainer (gather_samples of flatten_samples, trainer_results.h),
// named `implementation`. Collective over `communicator`, whose ranks are the trainers; every one
// must have measured as many steps.
TrainerResults gather_trainer_samples(Communicator& communicator, const TrainerSamples& mine,
                                      const SampleRows& layout, const std::string& implementation);

// The DDP statistics for the JSON: averages in seconds and the bucket layout (bytes per bucket).
nlohmann::json to_json(const ddp::DdpStats& stats);

}  // namespace gradwire::bench
