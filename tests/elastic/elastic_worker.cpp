// A worker of an elastic job (gradwire-run --elastic): trains a float64 linear model on seeded
// synthetic data with DDP, a DistributedSampler and SGD with momentum, committing every step.
//   elastic_worker STEPS BATCH [DIE_ID:DIE_STEP|-] [STEP_MS [SLOW_BELOW]]
// The worker whose GRADWIRE_ELASTIC_ID is DIE_ID kills itself (SIGKILL) at the start of step
// DIE_STEP. Each step sleeps STEP_MS (default 0; with SLOW_BELOW, only while the generation has
// fewer workers than that; with ELASTIC_TEST_PACE_FILE, only while that file exists) so that a
// replacement or a new worker has time to join. Rank 0 of
// each generation prints "elastic-test: generation G world W backend B" when it begins and, at
// each commit, "elastic-test: step S world W at T ms" (T: the wall clock), and at the end
// "elastic-test: final V..." (the parameters, %.17g): elastic_run_test and elastic_check replay
// the membership schedule on one process and compare.
#include <signal.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>

#include "elastic_data.h"
#include "gradwire/data/distributed_sampler.h"
#include "gradwire/ddp/ddp.h"
#include "gradwire/elastic/elastic.h"

namespace {
// Milliseconds since the epoch: comparable with the test scripts' `date +%s%N`.
long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: elastic_worker STEPS BATCH [DIE_ID:DIE_STEP]\n";
    return 2;
  }
  const int64_t steps = std::stoll(argv[1]);
  const int64_t batch = std::stoll(argv[2]);
  std::string die_id;
  int64_t die_step = -1;
  const int step_ms = argc > 4 ? std::stoi(argv[4]) : 0;
  const int slow_below = argc > 5 ? std::stoi(argv[5]) : 0;
  if (argc > 3 && std::string(argv[3]) != "-") {
    const std::string die = argv[3];
    die_id = die.substr(0, die.find(':'));
    die_step = std::stoll(die.substr(die.find(':') + 1));
  }
  const char* me = std::getenv("GRADWIRE_ELASTIC_ID");
  const bool doomed = me != nullptr && die_id == me;

  const gradwire::elastic_test::Data data = gradwire::elastic_test::make_data();
  auto model = gradwire::elastic_test::make_model();
  torch::optim::SGD optimizer(model->parameters(),
                              torch::optim::SGDOptions(gradwire::elastic_test::kLearningRate)
                                  .momentum(gradwire::elastic_test::kMomentum));
  gradwire::data::DistributedSampler sampler(data.x.size(0),
                                             gradwire::elastic_test::sampler_options());
  gradwire::elastic::State state;
  state.add("model", model);
  state.add("optimizer", optimizer);
  state.add("sampler", sampler);

  try {
    gradwire::elastic::run(state, [&](gradwire::elastic::Context& job) {
      gradwire::ddp::DistributedDataParallel ddp(model, job.communicator());
      if (job.rank() == 0) {
        std::printf("elastic-test: generation %lld world %d backend %s\n",
                    static_cast<long long>(job.generation().number), job.size(),
                    job.communicator()->backend().c_str());
        std::fflush(stdout);
      }
      while (state.value("step") < steps) {
        if (doomed && state.value("step") == die_step) ::raise(SIGKILL);
        // ELASTIC_TEST_PACE_FILE: sleep only while that file exists (the test decides the pace).
        const char* pace = std::getenv("ELASTIC_TEST_PACE_FILE");
        const bool slow = pace != nullptr ? std::filesystem::exists(pace)
                                          : slow_below == 0 || job.size() < slow_below;
        if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
        auto indices = sampler.next(static_cast<size_t>(batch));
        if (!indices || indices->size() < static_cast<size_t>(batch)) {
          throw std::runtime_error("elastic_worker: the epoch ran out; use fewer steps");
        }
        const auto index = torch::tensor(std::vector<int64_t>(indices->begin(), indices->end()));
        optimizer.zero_grad();
        auto loss =
            torch::mse_loss(ddp(data.x.index_select(0, index)), data.y.index_select(0, index));
        loss.backward();
        optimizer.step();
        state.value("step") += 1;
        // Printed before the commit, which may leave this function to take in new workers: the
        // commit keeps the step either way (a peer dying inside it restores this very commit).
        if (job.rank() == 0) {
          std::printf("elastic-test: step %lld world %d at %lld ms\n",
                      static_cast<long long>(state.value("step")), job.size(), wall_ms());
          std::fflush(stdout);
        }
        state.commit();
      }
      if (job.rank() == 0) {
        std::string line = "elastic-test: final";
        for (const auto& parameter : model->parameters()) {
          auto flat = parameter.detach().flatten();
          for (int64_t i = 0; i < flat.numel(); ++i) {
            char value[40];
            std::snprintf(value, sizeof(value), " %.17g", flat[i].item<double>());
            line += value;
          }
        }
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
      }
    });
  } catch (const std::exception& error) {
    std::fprintf(stderr, "elastic_worker: %s\n", error.what());
    return 1;
  }
  return 0;
}
