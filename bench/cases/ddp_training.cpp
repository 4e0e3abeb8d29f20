#include "cases/ddp_training.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <torch/torch.h>

#include <algorithm>

#include "gradwire/common/error.h"
#include "gradwire/models/zoo.h"
#include "harness/alternation.h"
#include "harness/host_collectives.h"
#include "harness/timing.h"

namespace gradwire::bench {

ddp::DdpOptions benchmark_ddp_options(const TrainingSetup& setup) {
  ddp::DdpOptions options;
  options.bucket_cap_mb = setup.bucket_cap_mb;
  // A cap below the default first bucket's caps the first bucket too.
  options.first_bucket_mb = std::min(1.0, setup.bucket_cap_mb);
  options.broadcast_buffers = false;
  options.schedule = setup.schedule;
  options.gradient_as_bucket_view = setup.gradient_as_bucket_view;
  options.shared_buckets = setup.shared_buckets;
  if (setup.comm_hook != "allreduce") options.comm_hook = ddp::make_comm_hook(setup.comm_hook);
  return options;
}

SyntheticTraining make_synthetic_training(const TrainingSetup& setup, std::uint64_t seed) {
  torch::manual_seed(seed);
  models::ModelConfig config;
  config.image_size = setup.image_size;
  config.num_classes = setup.num_classes;
  SyntheticTraining training;
  training.model = models::make_model(setup.model, config);
  std::vector<std::int64_t> shape = {setup.batch_size};
  for (const auto size : models::example_shape(setup.model, config)) shape.push_back(size);
  training.input = torch::randn(shape);
  training.target =
      torch::randint(0, models::num_outputs(setup.model, config), {setup.batch_size}, torch::kLong);
  return training;
}

torch::optim::SGDOptions sgd_options(const TrainingSetup& setup) {
  return torch::optim::SGDOptions(setup.lr)
      .momentum(setup.momentum)
      .weight_decay(setup.weight_decay);
}

namespace {

// One model with its random batch and SGD optimizer, trained plainly or through
// DistributedDataParallel. One thread.
class TrainingLoop {
 public:
  // make_synthetic_training(setup, seed): two loops with the same seed start identical.
  // `communicator` null: plain training; otherwise DDP over it (construction is collective over
  // its members).
  TrainingLoop(const TrainingSetup& setup, const std::shared_ptr<Communicator>& communicator,
               std::uint64_t seed) {
    SyntheticTraining training = make_synthetic_training(setup, seed);
    model_ = training.model;
    // A CUDA rank's GPU is the current one (set_cuda_device with its local rank, ranks.cpp).
    device_ = setup.device == "cuda"
                  ? communicator ? communicator->device() : torch::Device(torch::kCUDA)
                  : torch::Device(torch::kCPU);
    model_->to(device_);
    input_ = training.input.to(device_);  // random data, generated once
    target_ = training.target.to(device_);
    optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(), sgd_options(setup));
    if (communicator) {
      ddp_ = std::make_unique<ddp::DistributedDataParallel<torch::nn::SequentialImpl>>(
          model_, communicator, benchmark_ddp_options(setup));
    }
  }

  // One iteration; its times are appended to `record` unless it is null (warm-up).
  void step(TrainingMeasurement* record) {
    alternation_.begin();
    Stopwatch clock;
    optimizer_->zero_grad();
    clock.lap();
    const torch::Tensor output = ddp_ ? (*ddp_)(input_) : model_->forward(input_);
    const torch::Tensor loss = torch::nn::functional::cross_entropy(output, target_);
    const double forward = clock.lap();
    loss.backward();
    const double backward = clock.lap();
    optimizer_->step();
    if (device_.is_cuda()) torch::cuda::synchronize(device_.index());  // its kernels ran
    const double whole = clock.seconds();
    const double recorded = alternation_.end();
    if (record == nullptr) return;
    if (alternation_.active()) record->timeline_recorded.push_back(recorded);
    record->seconds.push_back(whole);
    record->forward_seconds.push_back(forward);
    record->backward_seconds.push_back(backward);
  }

  // Restarts DDP's statistics (after warm-up); finish fills ddp and stats of `record` with them.
  void reset_stats() {
    if (ddp_) ddp_->reset_stats();
  }

  void finish(TrainingMeasurement& record) const {
    record.ddp = ddp_ != nullptr;
    if (ddp_) record.stats = ddp_->stats();
  }

 private:
  torch::nn::Sequential model_{nullptr};
  torch::Device device_{torch::kCPU};
  torch::Tensor input_;
  torch::Tensor target_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  std::unique_ptr<ddp::DistributedDataParallel<torch::nn::SequentialImpl>> ddp_;
  AlternationProbe alternation_;  // GRADWIRE_TIMELINE_ALTERNATE_MS: which iterations recorded
};

}  // namespace

TrainingMeasurement train_and_time(const TrainingSetup& setup,
                                   const std::shared_ptr<Communicator>& communicator,
                                   std::uint64_t seed) {
  TrainingLoop loop(setup, communicator, seed);
  for (int i = 0; i < setup.warmup; ++i) loop.step(nullptr);
  loop.reset_stats();
  TrainingMeasurement measurement;
  for (int i = 0; i < setup.iterations; ++i) loop.step(&measurement);
  loop.finish(measurement);
  return measurement;
}

std::pair<TrainingMeasurement, TrainingMeasurement> train_and_time_interleaved(
    const TrainingSetup& setup, const std::shared_ptr<Communicator>& one_rank, std::uint64_t seed) {
  GRADWIRE_CHECK(one_rank != nullptr && one_rank->size() == 1);
  TrainingLoop baseline(setup, nullptr, seed);
  TrainingLoop wrapped(setup, one_rank, seed);
  for (int i = 0; i < setup.warmup; ++i) {
    baseline.step(nullptr);
    wrapped.step(nullptr);
  }
  wrapped.reset_stats();
  std::pair<TrainingMeasurement, TrainingMeasurement> measured;
  for (int i = 0; i < setup.iterations; ++i) {
    baseline.step(&measured.first);
    wrapped.step(&measured.second);
  }
  baseline.finish(measured.first);
  wrapped.finish(measured.second);
  return measured;
}

std::vector<double> gather_samples(Communicator& communicator, const std::vector<double>& samples) {
  const at::Tensor output =
      host_allgather(communicator, at::tensor(at::ArrayRef<double>(samples), at::kDouble));
  return std::vector<double>(output.data_ptr<double>(), output.data_ptr<double>() + output.numel());
}

TrainerResults gather_trainer_samples(Communicator& communicator, const TrainerSamples& mine,
                                      const SampleRows& layout, const std::string& implementation) {
  return unflatten_samples(gather_samples(communicator, flatten_samples(mine, layout)),
                           communicator.size(), layout, implementation);
}

nlohmann::json to_json(const ddp::DdpStats& stats) {
  nlohmann::json buckets = nlohmann::json::array();
  for (const auto& bucket : stats.buckets) {
    buckets.push_back({{"bytes", bucket.bytes}, {"parameters", bucket.parameters.size()}});
  }
  return {{"iterations", stats.iterations},
          {"forward_s", stats.forward_s},
          {"backward_s", stats.backward_s},
          {"communication_s", stats.communication_s},
          {"overlapped_s", stats.overlapped_s},
          {"exposed_s", stats.exposed_s},
          {"buckets_rebuilt", stats.buckets_rebuilt},
          {"comm_hook", stats.comm_hook},
          {"buckets", buckets}};
}

}  // namespace gradwire::bench
