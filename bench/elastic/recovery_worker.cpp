// The worker of the recovery measurement (bench/elastic/measure_recovery.py, docs/elastic.md
// "What recovery costs"): data-parallel training of an MLP that one worker leaves by SIGKILL.
//
//   elastic-recovery-worker elastic    STEPS DIE_SLOT:DIE_STEP
//   elastic-recovery-worker checkpoint STEPS DIE_RANK:DIE_STEP DIR
//
// elastic: under gradwire-run --elastic, elastic::run with a commit per step; the worker of slot
// DIE_SLOT (GRADWIRE_ELASTIC_ID 0.DIE_SLOT.0) dies at DIE_STEP. checkpoint: under gradwire-run
// --max-restarts 1, plain DDP; rank 0 writes DIR/checkpoint.pt after every step and every rank
// starts from it; rank DIE_RANK dies at DIE_STEP in the first attempt. Rank 0 prints
// "recovery: step S at T ms" after each step, the dying worker "recovery: death at T ms" (T: the
// wall clock, comparable across processes).
#include <signal.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "gradwire/common/settings.h"
#include "gradwire/gradwire.h"

namespace {

long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

torch::nn::Sequential make_model() {
  torch::manual_seed(0);
  return torch::nn::Sequential(torch::nn::Linear(256, 512), torch::nn::ReLU(),
                               torch::nn::Linear(512, 512), torch::nn::ReLU(),
                               torch::nn::Linear(512, 10));
}

// One step on this rank's share of the global batch of `step` (seeded by the step).
template <typename Ddp>
void train_step(Ddp& ddp, torch::optim::Optimizer& optimizer, int64_t step, int rank, int size) {
  constexpr int64_t kGlobalBatch = 96;
  torch::manual_seed(1000 + step);
  const torch::Tensor inputs = torch::randn({kGlobalBatch, 256});
  const torch::Tensor labels = torch::randint(0, 10, {kGlobalBatch});
  optimizer.zero_grad();
  torch::nn::functional::cross_entropy(ddp(inputs.tensor_split(size)[rank]),
                                       labels.tensor_split(size)[rank])
      .backward();
  optimizer.step();
}

void die() {
  std::printf("recovery: death at %lld ms\n", wall_ms());
  std::fflush(stdout);
  ::raise(SIGKILL);
}

void report(int64_t step) {
  std::printf("recovery: step %lld at %lld ms\n", static_cast<long long>(step), wall_ms());
  std::fflush(stdout);
}

int elastic(int64_t steps, int die_slot, int64_t die_step) {
  const char* id = std::getenv(gradwire::settings::kElasticId.name);
  const bool doomed = id != nullptr && std::string(id) == "0." + std::to_string(die_slot) + ".0";
  auto model = make_model();
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  gradwire::elastic::State state;
  state.add("model", model);
  state.add("optimizer", optimizer);
  gradwire::elastic::RunOptions options;
  options.verbose = false;
  gradwire::elastic::run(
      state,
      [&](gradwire::elastic::Context& job) {
        gradwire::ddp::DistributedDataParallel ddp(model, job.communicator());
        for (int64_t& step = state.value("step"); step < steps;) {
          if (doomed && step == die_step) die();
          train_step(ddp, optimizer, step, job.rank(), job.size());
          ++step;
          if (job.rank() == 0) report(step);
          state.commit();
        }
      },
      options);
  return 0;
}

int checkpoint(int64_t steps, int die_rank, int64_t die_step, const std::string& dir) {
  auto world = gradwire::init();
  auto comm = world->communicator();
  const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
  const bool doomed =
      comm->rank() == die_rank && (attempt == nullptr || std::string(attempt) == "0");
  auto model = make_model();
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  const std::string path = dir + "/checkpoint.pt";
  int64_t step = 0;
  if (std::filesystem::exists(path)) {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    torch::serialize::InputArchive part;
    archive.read("model", part);
    model->load(part);
    archive.read("optimizer", part);
    optimizer.load(part);
    torch::Tensor saved;
    archive.read("step", saved);
    step = saved.item<int64_t>();
  }
  gradwire::ddp::DistributedDataParallel ddp(model, comm);
  while (step < steps) {
    if (doomed && step == die_step) die();
    train_step(ddp, optimizer, step, comm->rank(), comm->size());
    ++step;
    if (comm->rank() == 0) {
      torch::serialize::OutputArchive archive;
      torch::serialize::OutputArchive part;
      model->save(part);
      archive.write("model", part);
      torch::serialize::OutputArchive state;
      optimizer.save(state);
      archive.write("optimizer", state);
      archive.write("step", torch::tensor(step));
      archive.save_to(path + ".tmp");
      std::filesystem::rename(path + ".tmp", path);
      report(step);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: elastic-recovery-worker elastic STEPS SLOT:STEP | checkpoint STEPS "
                 "RANK:STEP DIR\n");
    return 2;
  }
  const std::string mode = argv[1];
  const int64_t steps = std::atoll(argv[2]);
  const std::string die = argv[3];
  const int who = std::atoi(die.substr(0, die.find(':')).c_str());
  const int64_t when = std::atoll(die.substr(die.find(':') + 1).c_str());
  try {
    if (mode == "elastic") return elastic(steps, who, when);
    if (mode == "checkpoint" && argc > 4) return checkpoint(steps, who, when, argv[4]);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "elastic-recovery-worker: %s\n", error.what());
    return 1;
  }
  std::fprintf(stderr, "elastic-recovery-worker: unknown mode '%s'\n", mode.c_str());
  return 2;
}
