#include "cases/ddp_training.h"

#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <torch/torch.h>

#include "gradwire/models/zoo.h"
#include "harness/timing.h"

namespace gradwire::bench {

namespace {

// Upstream's optimizer: SGD, lr 0.001, momentum 0.9, weight decay 1e-4.
torch::optim::SGDOptions sgd_options() {
  return torch::optim::SGDOptions(0.001).momentum(0.9).weight_decay(1e-4);
}

}  // namespace

ddp::DdpOptions benchmark_ddp_options(const TrainingSetup& setup) {
  ddp::DdpOptions options;
  options.bucket_cap_mb = setup.bucket_cap_mb;
  options.broadcast_buffers = false;
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
  const IterationCounts warmup{setup.warmup, 0};
  const IterationCounts timed{0, setup.iterations};
  if (!communicator) {
    auto step = [&] {
      optimizer.zero_grad();
      const torch::Tensor loss =
          torch::nn::functional::cross_entropy(model->forward(input), target);
      loss.backward();
      optimizer.step();
    };
    time_iterations(warmup, step);
    measurement.seconds = time_iterations(timed, step);
    return measurement;
  }
  ddp::DistributedDataParallel wrapped(model, communicator, benchmark_ddp_options(setup));
  auto step = [&] {
    optimizer.zero_grad();
    const torch::Tensor output = wrapped(input);
    const torch::Tensor loss = torch::nn::functional::cross_entropy(output, target);
    loss.backward();
    optimizer.step();
  };
  time_iterations(warmup, step);
  wrapped.reset_stats();
  measurement.seconds = time_iterations(timed, step);
  measurement.ddp = true;
  measurement.stats = wrapped.stats();
  return measurement;
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
