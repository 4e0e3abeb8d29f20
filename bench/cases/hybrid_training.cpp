#include "cases/hybrid_training.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <torch/torch.h>

#include <algorithm>

#include "cases/hybrid_batches.h"
#include "cases/ps_transports.h"
#include "gradwire/common/error.h"
#include "gradwire/ddp/ddp.h"
#include "gradwire/ps/client.h"
#include "gradwire/ps/embedding.h"
#include "harness/alternation.h"
#include "harness/timing.h"

namespace gradwire::bench {

namespace {

struct BatchTensors {
  at::Tensor ids;
  at::Tensor offsets;
  at::Tensor targets;
  std::int64_t size = 0;
};

at::Tensor long_tensor(const std::vector<std::int64_t>& values) {
  return at::tensor(at::ArrayRef<std::int64_t>(values), at::kLong);
}

std::vector<BatchTensors> epoch_tensors(HybridBatchGenerator& generator, int batches) {
  std::vector<BatchTensors> tensors;
  for (const auto& batch : generator.next_epoch(batches)) {
    tensors.push_back({long_tensor(batch.ids), long_tensor(batch.offsets),
                       long_tensor(batch.targets), batch.size()});
  }
  return tensors;
}

// PyTorch's DDP + RPC benchmark's dense part, with an input as wide as the embedding.
torch::nn::Sequential dense_model(std::int64_t width) {
  using torch::nn::Linear;
  return torch::nn::Sequential(Linear(width, 256), Linear(256, 128), torch::nn::ReLU(),
                               Linear(128, 64), Linear(64, 32), Linear(32, kHybridClasses));
}

ps::TableConfig table_config(const HybridSettings& settings, int repeat, int trainers) {
  ps::TableConfig table;
  table.name = "hybrid_bench_" + std::to_string(repeat);  // each repeat's table fresh
  table.num_rows = settings.rows;
  table.dim = settings.embedding_width();
  table.optimizer.kind = ps::OptimizerKind::kSgd;
  table.optimizer.lr = kHybridLearningRate;
  // torch.nn.EmbeddingBag's initialisation: normal(0, 1).
  table.initializer.kind = ps::InitializerKind::kNormal;
  table.initializer.scale = 1.0;
  table.initializer.seed = settings.seed;
  table.mode = settings.mode == HybridMode::kSync ? ps::UpdateMode::kSync : ps::UpdateMode::kAsync;
  // Each trainer's gradient applied whole, as PyTorch's DistributedOptimizer does.
  table.reduction = ps::GradientReduction::kSum;
  table.num_trainers = trainers;
  return table;
}

}  // namespace

PlainStep time_hybrid_plain_step(const HybridSettings& settings, int threads) {
  if (at::get_num_threads() != threads) at::set_num_threads(threads);
  torch::manual_seed(static_cast<std::uint64_t>(settings.seed));
  std::vector<torch::nn::EmbeddingBag> bags;
  std::vector<torch::Tensor> parameters;
  for (int server = 0; server < settings.servers; ++server) {
    bags.emplace_back(
        torch::nn::EmbeddingBagOptions(settings.rows, settings.dim).mode(torch::kSum));
    parameters.push_back(bags.back()->weight);
  }
  torch::nn::Sequential dense = dense_model(settings.embedding_width());
  for (const auto& parameter : dense->parameters()) parameters.push_back(parameter);
  torch::optim::SGD optimizer(parameters, torch::optim::SGDOptions(kHybridLearningRate));

  HybridBatchGenerator generator(settings.seed, 0, settings.rows);
  PlainStep plain;
  plain.warmup = kHybridPlainWarmup;
  plain.threads = threads;
  for (int epoch = 0; epoch < kHybridPlainWarmup + kHybridPlainEpochs; ++epoch) {
    const std::vector<BatchTensors> batches = epoch_tensors(generator, settings.batches);
    const Stopwatch clock;
    for (const auto& batch : batches) {
      optimizer.zero_grad();
      std::vector<at::Tensor> lookups;
      for (auto& bag : bags) lookups.push_back(bag->forward(batch.ids, batch.offsets));
      const at::Tensor loss =
          torch::nn::functional::cross_entropy(dense->forward(at::cat(lookups, 1)), batch.targets);
      loss.backward();
      optimizer.step();
    }
    const double elapsed = clock.seconds();
    if (epoch >= kHybridPlainWarmup) plain.seconds.push_back(elapsed);
  }
  return plain;
}

TrainerSamples train_hybrid(const HybridSettings& settings,
                            const std::shared_ptr<Communicator>& communicator, int repeat,
                            std::vector<std::string>* transports) {
  const int trainer = communicator->rank();
  ps::ClientOptions client_options;
  client_options.rank = trainer;
  client_options.world_size = communicator->size();
  client_options.defer_pushes = settings.defer_pushes;
  const std::shared_ptr<ps::Client> client = ps::connect(client_options);
  ps::RemoteEmbeddingBagOptions embedding_options;
  embedding_options.table = table_config(settings, repeat, communicator->size());
  embedding_options.mode = ps::BagMode::kSum;
  ps::RemoteEmbeddingBag embedding(client, embedding_options);

  torch::manual_seed(static_cast<std::uint64_t>(settings.seed));
  torch::nn::Sequential dense = dense_model(settings.embedding_width());
  ddp::DistributedDataParallel ddp_dense(dense, communicator);
  torch::optim::SGD optimizer(dense->parameters(), torch::optim::SGDOptions(kHybridLearningRate));

  HybridBatchGenerator generator(settings.seed, trainer, settings.rows);
  TrainerSamples result;
  result.trainer = trainer;
  for (const auto& phase : hybrid_phases()) result.phase_seconds[phase] = {};
  // GRADWIRE_TIMELINE_ALTERNATE_MS: which epochs the timeline recorded, which it did not.
  AlternationProbe alternation;
  for (int epoch = 0; epoch < settings.warmup + settings.epochs; ++epoch) {
    const std::vector<BatchTensors> batches = epoch_tensors(generator, settings.batches);
    double lookup = 0, dense_forward = 0, backward = 0, push = 0, step = 0;
    std::int64_t examples = 0;
    ddp_dense.reset_stats();
    alternation.begin();
    const Stopwatch epoch_clock;
    for (const auto& batch : batches) {
      Stopwatch clock;
      const at::Tensor embedded = embedding->forward(batch.ids, batch.offsets);
      lookup += clock.lap();
      const at::Tensor loss =
          torch::nn::functional::cross_entropy(ddp_dense(embedded), batch.targets);
      dense_forward += clock.lap();
      loss.backward();  // the embedding's hook sends its gradient to the servers
      backward += clock.lap();
      if (!settings.defer_pushes) client->flush();  // else they go with step()
      push += clock.lap();
      client->step();
      optimizer.step();
      optimizer.zero_grad();
      step += clock.lap();
      examples += batch.size;
    }
    const double elapsed = epoch_clock.seconds();
    const double recorded = alternation.end();
    const ddp::DdpStats stats = ddp_dense.stats();
    // The part of backward spent waiting for the allreduce after the last gradient.
    const double allreduce =
        std::min(backward, stats.exposed_s * static_cast<double>(stats.iterations));
    if (epoch < settings.warmup) continue;
    result.seconds.push_back(elapsed);
    result.examples.push_back(examples);
    result.phase_seconds["lookup"].push_back(lookup);
    result.phase_seconds["dense_forward"].push_back(dense_forward);
    result.phase_seconds["backward"].push_back(backward - allreduce);
    result.phase_seconds["allreduce"].push_back(allreduce);
    result.phase_seconds["push"].push_back(push);
    result.phase_seconds["step"].push_back(step);
    if (alternation.active()) result.timeline_recorded.push_back(recorded);
  }
  // After the epochs: a channel given up after a timeout has gone back to gRPC by now.
  if (transports != nullptr) *transports = client_transports(*client);
  return result;
}

}  // namespace gradwire::bench
