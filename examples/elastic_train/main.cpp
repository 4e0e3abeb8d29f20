// Elastic data-parallel training (docs/elastic.md): the workers survive the death of one of them
// and take in its replacement, without restarting the job.
//
//   build/bin/gradwire-run --elastic -n 3 --max-restarts 1 build/bin/example-elastic-train \
//       [steps] [--die WORKER_ID:STEP]
//
// --die makes the worker whose GRADWIRE_ELASTIC_ID is WORKER_ID ("<node>.<slot>.<incarnation>",
// e.g. 0.1.0) kill itself at STEP, to see what happens: the others go back to their last commit
// and go on without it; gradwire-run starts a replacement (0.1.1), which joins at a commit.
// The global batch of step s is drawn from seed s and split among the workers of the moment, so
// the result does not depend on who trained which step.
#include <signal.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gradwire/gradwire.h"

namespace {

int run(int64_t steps, const std::string& die_id, int64_t die_step) {
  const char* me = std::getenv("GRADWIRE_ELASTIC_ID");
  const bool doomed = me != nullptr && die_id == me;
  constexpr int64_t kGlobalBatch = 60;

  torch::manual_seed(0);
  const torch::Tensor centers = torch::randn({4, 20}) * 0.5;
  torch::nn::Sequential model(torch::nn::Linear(20, 64), torch::nn::ReLU(),
                              torch::nn::Linear(64, 4));
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));

  // What a generation starts from, and what the survivors go back to: kept in memory.
  gradwire::elastic::State state;
  state.add("model", model);
  state.add("optimizer", optimizer);

  gradwire::elastic::RunOptions options;
  options.on_reset.push_back([](const gradwire::elastic::Context& job) {
    if (job.rank() == 0)
      std::printf("generation %lld: %d workers\n", static_cast<long long>(job.generation().number),
                  job.size());
  });
  gradwire::elastic::run(
      state,
      [&](gradwire::elastic::Context& job) {
        gradwire::ddp::DistributedDataParallel ddp(model, job.communicator());
        for (int64_t& step = state.value("step"); step < steps;) {
          if (doomed && step == die_step) ::raise(SIGKILL);
          torch::manual_seed(1000 + step);  // the step's global batch, whoever trains it
          const torch::Tensor labels = torch::randint(0, 4, {kGlobalBatch});
          const torch::Tensor inputs =
              centers.index_select(0, labels) + torch::randn({kGlobalBatch, 20});
          const torch::Tensor x = inputs.tensor_split(job.size())[job.rank()];
          const torch::Tensor y = labels.tensor_split(job.size())[job.rank()];
          optimizer.zero_grad();
          const torch::Tensor loss = torch::nn::functional::cross_entropy(ddp(x), y);
          loss.backward();
          optimizer.step();
          ++step;
          if (job.rank() == 0 && step % 20 == 0) {
            std::printf("step %lld loss %.4f\n", static_cast<long long>(step), loss.item<double>());
          }
          state.commit();  // new workers join here
        }
      },
      options);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 100;
  std::string die_id;
  int64_t die_step = -1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--die") == 0 && i + 1 < argc) {
      const std::string die = argv[++i];
      die_id = die.substr(0, die.find(':'));
      die_step = std::atoll(die.substr(die.find(':') + 1).c_str());
    } else {
      steps = std::atoll(argv[i]);
    }
  }
  try {
    return run(steps, die_id, die_step);
  } catch (const gradwire::Error& e) {
    std::fprintf(stderr, "example-elastic-train: %s\n", e.what());
    return 1;
  }
}
