#include "cases/ddp_training.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>

#include "gradwire/models/zoo.h"

namespace gradwire::bench {

namespace {

using Clock = std::chrono::steady_clock;

// Upstream's optimizer: SGD, lr 0.001, momentum 0.9, weight decay 1e-4.
torch::optim::SGDOptions sgd_options() {
  return torch::optim::SGDOptions(0.001).momentum(0.9).weight_decay(1e-4);
}

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// `warmup` untimed steps, then `iterations` timed ones; `loss` runs the forward and the loss.
void time_steps(int warmup, int iterations, torch::optim::Optimizer& optimizer,
                const std::function<torch::Tensor()>& loss, TrainingMeasurement& out) {
  for (int i = 0; i < warmup + iterations; ++i) {
    const auto start = Clock::now();
    optimizer.zero_grad();
    const auto forward_start = Clock::now();
    const torch::Tensor value = loss();
    const auto backward_start = Clock::now();
    value.backward();
    const auto backward_end = Clock::now();
    optimizer.step();
    const auto end = Clock::now();
    if (i < warmup) continue;
    out.seconds.push_back(seconds_between(start, end));
    out.forward_seconds.push_back(seconds_between(forward_start, backward_start));
    out.backward_seconds.push_back(seconds_between(backward_start, backward_end));
  }
}

}  // namespace

ddp::DdpOptions benchmark_ddp_options(const TrainingSetup& setup) {
  ddp::DdpOptions options;
  options.bucket_cap_mb = setup.bucket_cap_mb;
  // A cap below the default first bucket's caps the first bucket too.
  options.first_bucket_mb = std::min(options.first_bucket_mb, setup.bucket_cap_mb);
  options.broadcast_buffers = false;
  options.schedule = setup.schedule;
  return options;
}

TrainingMeasurement train_and_time(const TrainingSetup& setup,
                                   const std::shared_ptr<Communicator>& communicator,
                                   std::uint64_t seed) {
  torch::manual_seed(seed);
  models::ModelConfig config;
  config.image_size = setup.image_size;
  torch::nn::Sequential model = models::make_model(setup.model, config);
  std::vector<std::int64_t> shape = {setup.batch_size};
  for (const auto size : models::example_shape(setup.model, config)) shape.push_back(size);
  // Random data, generated once.
  const torch::Tensor input = torch::randn(shape);
  const torch::Tensor target =
      torch::randint(0, models::num_outputs(setup.model, config), {setup.batch_size}, torch::kLong);
  torch::optim::SGD optimizer(model->parameters(), sgd_options());

  TrainingMeasurement measurement;
  if (!communicator) {
    time_steps(
        setup.warmup, setup.iterations, optimizer,
        [&] { return torch::nn::functional::cross_entropy(model->forward(input), target); },
        measurement);
    return measurement;
  }
  ddp::DistributedDataParallel wrapped(model, communicator, benchmark_ddp_options(setup));
  auto loss = [&] { return torch::nn::functional::cross_entropy(wrapped(input), target); };
  time_steps(setup.warmup, 0, optimizer, loss, measurement);
  wrapped.reset_stats();
  time_steps(0, setup.iterations, optimizer, loss, measurement);
  measurement.ddp = true;
  measurement.stats = wrapped.stats();
  return measurement;
}

std::vector<double> gather_samples(Communicator& communicator, const std::vector<double>& samples) {
  const at::Tensor input = at::tensor(at::ArrayRef<double>(samples), at::kDouble);
  at::Tensor output =
      at::empty({communicator.size() * static_cast<std::int64_t>(samples.size())}, at::kDouble);
  communicator.allgather(input, output)->wait();
  return std::vector<double>(output.data_ptr<double>(), output.data_ptr<double>() + output.numel());
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
