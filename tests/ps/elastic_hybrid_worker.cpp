// A trainer of the elastic hybrid job (elastic_hybrid_job.h) as a process under gradwire-run
// --elastic, for elastic_hybrid_process_test.cpp: remote embedding bags on the parameter servers
// of GRADWIRE_PS_ADDRS (sync, with GRADWIRE_TOKEN), a DDP dense layer, a DistributedSampler, all
// in an elastic::State with the client's ps::ElasticMember; elastic::run with default RunOptions
// (the job store gradwire-run hosts), a commit after every step.
//
//   elastic_hybrid_worker STEPS DIE_ID:DIE_STEP:POINT|- [STEP_MS [SLOW_BELOW]]
//
// The worker whose GRADWIRE_ELASTIC_ID is DIE_ID kills itself (SIGKILL) in the step that begins
// after DIE_STEP steps: at its start (POINT `start`), or after its backward (the DDP allreduce and
// its table pushes) and before its parameter-server step (POINT `before-server-step`). Each step
// sleeps STEP_MS (default 0) while the generation has fewer than SLOW_BELOW workers (default:
// always), so that a replacement has time to join. Rank 0 of each generation prints
//   elastic-hybrid: generation G world W           when the generation begins
//   elastic-hybrid: step S world W                 after each step, before its commit
//   elastic-hybrid: dense V...                     at the end: weight then bias, %.9g
//   elastic-hybrid: rows V...                      then every row of the table read back, %.9g
#include <signal.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "elastic_hybrid_job.h"
#include "gradwire/data/distributed_sampler.h"
#include "gradwire/ddp/ddp.h"
#include "gradwire/elastic/elastic.h"
#include "gradwire/ps/client.h"
#include "gradwire/ps/elastic_member.h"
#include "gradwire/ps/embedding.h"

namespace {

namespace job = gradwire::ps::elastic_hybrid;

enum class DeathPoint { kNone, kAtTheStart, kBeforeTheServerStep };

struct Death {
  std::string id;
  int64_t step = -1;
  DeathPoint point = DeathPoint::kNone;
};

// "ID:STEP:POINT" or "-".
Death parse_death(const std::string& text) {
  Death death;
  if (text == "-") return death;
  const size_t first = text.find(':');
  const size_t second = text.find(':', first + 1);
  if (first == std::string::npos || second == std::string::npos) {
    throw std::invalid_argument("expected DIE_ID:DIE_STEP:POINT or -, got '" + text + "'");
  }
  death.id = text.substr(0, first);
  death.step = std::stoll(text.substr(first + 1, second - first - 1));
  const std::string point = text.substr(second + 1);
  if (point == "start") {
    death.point = DeathPoint::kAtTheStart;
  } else if (point == "before-server-step") {
    death.point = DeathPoint::kBeforeTheServerStep;
  } else {
    throw std::invalid_argument("POINT must be start or before-server-step, got '" + point + "'");
  }
  return death;
}

// "elastic-hybrid: NAME" and every value of `values`, %.9g (float32 round-trips).
void print_values(const char* name, const std::vector<at::Tensor>& values) {
  std::string line = std::string("elastic-hybrid: ") + name;
  for (const at::Tensor& tensor : values) {
    const at::Tensor flat = tensor.detach().to(at::kFloat).contiguous().flatten();
    const float* data = flat.data_ptr<float>();
    for (int64_t i = 0; i < flat.numel(); ++i) {
      char value[32];
      std::snprintf(value, sizeof(value), " %.9g", static_cast<double>(data[i]));
      line += value;
    }
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: elastic_hybrid_worker STEPS DIE_ID:DIE_STEP:POINT|- [STEP_MS "
                 "[SLOW_BELOW]]\n";
    return 2;
  }
  try {
    const int64_t steps = std::stoll(argv[1]);
    const Death death = parse_death(argv[2]);
    const int step_ms = argc > 3 ? std::stoi(argv[3]) : 0;
    const int slow_below = argc > 4 ? std::stoi(argv[4]) : 0;
    const char* me = std::getenv("GRADWIRE_ELASTIC_ID");
    const bool doomed = me != nullptr && death.point != DeathPoint::kNone && death.id == me;

    const job::Data data = job::make_data();
    auto client = gradwire::ps::connect();  // servers, token, elastic: from the environment
    gradwire::ps::RemoteEmbeddingBag bags(
        client,
        gradwire::ps::RemoteEmbeddingBagOptions{job::make_table(), gradwire::ps::BagMode::kMean});
    torch::nn::Linear dense = job::make_dense();
    torch::optim::SGD optimizer(dense->parameters(),
                                torch::optim::SGDOptions(job::kDenseLr).momentum(0.9));
    gradwire::data::DistributedSampler sampler(job::kSamples, job::sampler_options());
    gradwire::ps::ElasticMember tables(client);
    gradwire::elastic::State state;
    state.add("dense", dense);
    state.add("optimizer", optimizer);
    state.add("sampler", sampler);
    state.add("tables", tables);

    gradwire::elastic::run(state, [&](gradwire::elastic::Context& context) {
      gradwire::ddp::DistributedDataParallel model(dense, context.communicator());
      if (context.rank() == 0) {
        std::printf("elastic-hybrid: generation %lld world %d\n",
                    static_cast<long long>(context.generation().number), context.size());
        std::fflush(stdout);
      }
      while (state.value("step") < steps) {
        const bool dies_now = doomed && state.value("step") == death.step;
        if (dies_now && death.point == DeathPoint::kAtTheStart) ::raise(SIGKILL);
        if (slow_below == 0 || context.size() < slow_below) {
          std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
        }
        const auto taken = sampler.next(job::kBatch);
        if (!taken || taken->size() < static_cast<size_t>(job::kBatch)) {
          throw std::runtime_error("elastic_hybrid_worker: the epoch ran out; use fewer steps");
        }
        const at::Tensor index = torch::tensor(std::vector<int64_t>(taken->begin(), taken->end()));
        optimizer.zero_grad();
        torch::nn::functional::cross_entropy(model(bags(data.bags.index_select(0, index))),
                                             data.labels.index_select(0, index))
            .backward();
        optimizer.step();
        // Its gradients allreduced and pushed, its step never finished: the others wait in
        // client->step() until the membership's wait interrupt sends them back.
        if (dies_now) ::raise(SIGKILL);
        client->step();
        state.value("step") += 1;
        // Printed before the commit, which may leave this function to take in new workers.
        if (context.rank() == 0) {
          std::printf("elastic-hybrid: step %lld world %d\n",
                      static_cast<long long>(state.value("step")), context.size());
          std::fflush(stdout);
        }
        state.commit();
      }
      if (context.rank() == 0) {
        print_values("dense", {dense->weight, dense->bias});
        print_values("rows", {client->lookup("bags", at::arange(job::kRows, at::kLong))});
      }
    });
  } catch (const std::exception& error) {
    std::fprintf(stderr, "elastic_hybrid_worker: %s\n", error.what());
    return 1;
  }
  return 0;
}
