#include "cases/ps_training.h"

#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <torch/torch.h>

#include <optional>

#include "cases/ps_case.h"
#include "cases/ps_transports.h"
#include "gradwire/common/error.h"
#include "gradwire/models/zoo.h"
#include "gradwire/ps/client.h"
#include "gradwire/ps/dense.h"
#include "harness/timing.h"

namespace gradwire::bench {

namespace {

constexpr const char* kTable = "ps_bench";

ps::DenseOptions dense_options(const PsSettings& settings) {
  ps::DenseOptions options;
  options.table = kTable;
  options.role = settings.role == PsRole::kSum ? ps::DenseRole::kSum : ps::DenseRole::kOptimizer;
  options.optimizer.kind = ps::OptimizerKind::kSgd;
  options.optimizer.lr = kPsLearningRate;
  options.optimizer.momentum = kPsMomentum;
  options.mode = settings.mode.sync ? ps::UpdateMode::kSync : ps::UpdateMode::kAsync;
  options.staleness = settings.mode.staleness;
  options.overlap_forward = true;
  return options;
}

nlohmann::json layout_json(const ps::DenseLayout& layout) {
  std::int64_t elements = 0;
  for (const auto numel : layout.param_numel) elements += numel;
  nlohmann::json servers = nlohmann::json::array();
  for (const auto& totals : ps::server_totals(layout)) {
    servers.push_back(
        {{"elements", totals.elements}, {"bytes", totals.bytes}, {"blocks", totals.blocks}});
  }
  return {{"parameters", layout.param_numel.size()},
          {"elements", elements},
          {"blocks", layout.blocks.size()},
          {"push_messages", layout.push_messages.size()},
          {"pull_messages", layout.pull_messages.size()},
          {"row_width", layout.row_width},
          {"num_rows", layout.num_rows},
          {"padding_fraction", ps::padding_fraction(layout)},
          {"servers", servers}};
}

// How trainer 0 reached the servers (docs/ps.md "Shared memory", "Shared-memory calls"), from
// the client after training: `transports` is client_transports(client).
std::string transport_text(const ps::Client& client, const std::vector<std::string>& transports) {
  int sharing = 0;
  int channels = 0;
  for (int server = 0; server < client.num_servers(); ++server) {
    sharing += client.shares_memory_with(server) ? 1 : 0;
    channels += transports.at(static_cast<std::size_t>(server)) == "shared memory" ? 1 : 0;
  }
  const auto of_servers = [&](int count) {
    return count < client.num_servers() ? " with " + std::to_string(count) + " of " +
                                              std::to_string(client.num_servers()) + " servers"
                                        : std::string();
  };
  if (sharing == 0) return "rows as bytes over gRPC";
  return "rows in shared memory" + of_servers(sharing) +
         (channels == 0 ? ", calls over gRPC"
                        : ", calls over shared memory" + of_servers(channels));
}

}  // namespace

TrainingSetup ps_training_setup(const PsSettings& settings) {
  TrainingSetup setup;
  setup.model = settings.model;
  setup.image_size = settings.image_size;
  setup.batch_size = settings.batch_size;
  setup.num_classes = settings.num_classes;
  setup.warmup = settings.warmup;
  setup.iterations = settings.measured_iterations();
  setup.lr = kPsLearningRate;
  setup.momentum = kPsMomentum;
  setup.weight_decay = 0;
  return setup;
}

std::uint64_t ps_trainer_seed(const PsSettings& settings, int trainer) {
  return settings.seed * 1000003 + static_cast<std::uint64_t>(trainer);
}

PsTrainerOutcome train_ps(const PsSettings& settings, int trainer, int trainers) {
  const TrainingSetup setup = ps_training_setup(settings);
  SyntheticTraining training = make_synthetic_training(setup, ps_trainer_seed(settings, trainer));
  ps::ClientOptions client_options;
  client_options.rank = trainer;
  client_options.world_size = trainers;
  const std::shared_ptr<ps::Client> client = ps::connect(client_options);
  // Trainer 0's weights become everyone's (DenseModel).
  ps::DenseModel dense(client, training.model, dense_options(settings));
  if (!models::set_forward_pre_hook(training.model, dense.forward_pre_hook())) {
    throw InvalidArgument(settings.model + " takes no forward pre-hook");
  }
  std::optional<torch::optim::SGD> optimizer;  // the summation role's, on the trainer
  if (settings.role == PsRole::kSum) {
    optimizer.emplace(training.model->parameters(), sgd_options(setup));
  }

  PsTrainerOutcome outcome;
  outcome.layout = layout_json(dense.layout());
  outcome.layout_text = dense.describe_layout();
  TrainerSamples& samples = outcome.samples;
  samples.trainer = trainer;
  for (int i = 0; i < setup.warmup + setup.iterations; ++i) {
    Stopwatch clock;
    const ps::DenseStats before = dense.stats();
    training.model->zero_grad();
    clock.lap();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(
        training.model->forward(training.input), training.target);
    const double forward = clock.lap();
    const ps::DenseStats after_forward = dense.stats();
    loss.backward();
    const double backward = clock.lap();
    dense.step();
    if (optimizer) optimizer->step();
    const double whole = clock.seconds();
    if (i < setup.warmup) continue;
    const ps::DenseStats after = dense.stats();
    const double forward_pull_wait = after_forward.pull_wait_s - before.pull_wait_s;
    samples.seconds.push_back(whole);
    samples.examples.push_back(setup.batch_size);
    samples.phase_seconds["forward"].push_back(forward - forward_pull_wait);
    samples.phase_seconds["backward"].push_back(backward);
    samples.phase_seconds["push_wait"].push_back(after.push_wait_s - before.push_wait_s);
    samples.phase_seconds["server_apply"].push_back(after.server_step_s - before.server_step_s);
    samples.phase_seconds["pull_wait"].push_back(after.pull_wait_s - before.pull_wait_s);
    samples.bytes["pushed"].push_back(
        static_cast<double>(after.bytes_pushed - before.bytes_pushed));
    samples.bytes["pulled"].push_back(
        static_cast<double>(after.bytes_pulled - before.bytes_pulled));
  }
  // After the iterations: a channel given up after a timeout has gone back to gRPC by now.
  outcome.transports = client_transports(*client);
  outcome.layout["transport"] = transport_text(*client, outcome.transports);
  return outcome;
}

PlainStep time_ps_plain_step(const PsSettings& settings, int threads) {
  if (at::get_num_threads() != threads) at::set_num_threads(threads);
  TrainingSetup setup = ps_training_setup(settings);
  setup.warmup = kPsPlainWarmup;
  setup.iterations = kPsPlainIterations;
  PlainStep plain;
  plain.seconds = train_and_time(setup, nullptr, ps_trainer_seed(settings, 0)).seconds;
  plain.warmup = kPsPlainWarmup;
  plain.threads = threads;
  return plain;
}

TrainerSamples train_ps_comparison(const PsSettings& settings,
                                   const std::shared_ptr<Communicator>& communicator, int trainer) {
  const TrainingSetup setup = ps_training_setup(settings);
  const TrainingMeasurement measured =
      train_and_time(setup, communicator, ps_trainer_seed(settings, trainer));
  TrainerSamples samples;
  samples.trainer = trainer;
  samples.seconds = measured.seconds;
  samples.examples.assign(measured.seconds.size(), setup.batch_size);
  samples.phase_seconds["forward"] = measured.forward_seconds;
  samples.phase_seconds["backward"] = measured.backward_seconds;
  return samples;
}

}  // namespace gradwire::bench
