// An elastic hybrid job (docs/elastic.md "Parameter servers"): remote embedding bags on two
// in-process servers (sync), a DDP dense layer, three trainers under elastic::run on one job
// store. A trainer dies (its thread leaves run(); the test marks it exited, as gradwire-run does)
// at the start of a step, or after its DDP allreduce and before its parameter-server step (the
// others then wait in Client::step(), which the membership's wait interrupt ends); the two others
// go back to their commit and go on; later a new trainer joins at a commit. The table and the dense
// layer end equal to one process trained on the concatenation of the live trainers' batches, step
// by step, following the same membership schedule.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "client_test_support.h"
#include "elastic_hybrid_job.h"
#include "gradwire/comm/job_store.h"
#include "gradwire/data/distributed_sampler.h"
#include "gradwire/ddp/ddp.h"
#include "gradwire/elastic/elastic.h"
#include "gradwire/ps/elastic_member.h"
#include "gradwire/ps/embedding.h"

namespace gradwire::ps {
namespace elastic_hybrid {
namespace {

using testing::Servers;
using testing::Transport;

constexpr int64_t kJoinAfter = 6;  // 0.1.1 starts once the two survivors passed this step

struct Doomed {};  // thrown by the trainer that dies

enum class Death { kAtAStepsStart, kBeforeItsServerStep };

class ElasticHybrid : public ::testing::TestWithParam<std::tuple<Transport, Death>> {};

TEST_P(ElasticHybrid, ATrainerLostAndOneJoinedEqualOneProcess) {
  torch::set_num_threads(1);
  const Transport transport = std::get<0>(GetParam());
  const Death death = std::get<1>(GetParam());
  // Far longer than the test may take: survivors waiting in step() for the dead trainer are
  // woken by the membership, not by this timeout.
  constexpr auto kStepTimeout = std::chrono::seconds(120);
  const TableConfig table = make_table();
  Servers servers(2, testing::one_process(transport));
  auto store = JobStore::in_process(std::chrono::seconds(60));
  const Data data = make_data();

  std::mutex mutex;
  std::map<int64_t, int> world_at_step;  // written by each generation's rank 0; the last wins
  std::map<int64_t, at::Tensor> weight_at_step;  // the same: the dense weight after the step
  std::vector<at::Tensor> final_dense;           // rank 0's dense parameters at the end
  std::atomic<int64_t> last_step{0};
  std::map<std::string, std::string> errors;

  auto worker = [&](const std::string& id) {
    try {
      ClientOptions options = testing::with_transport(
          testing::client_options(servers.addresses(), 0, 1, kStepTimeout), transport);
      options.elastic = true;
      auto client = connect(options);
      RemoteEmbeddingBag bags(client, RemoteEmbeddingBagOptions{table, BagMode::kMean});
      torch::nn::Linear dense = make_dense();
      torch::optim::SGD optimizer(dense->parameters(),
                                  torch::optim::SGDOptions(kDenseLr).momentum(0.9));
      data::DistributedSampler sampler(kSamples, sampler_options());
      ElasticMember tables(client);
      elastic::State state;
      state.add("dense", dense);
      state.add("optimizer", optimizer);
      state.add("sampler", sampler);
      state.add("tables", tables);
      elastic::RunOptions run;
      run.store = store.get();
      run.worker_id = id;
      run.initial_workers = 3;
      run.init.backend = "gloo";
      run.init.timeout = std::chrono::seconds(30);
      run.verbose = false;
      elastic::run(
          state,
          [&](elastic::Context& job) {
            ddp::DistributedDataParallel model(dense, job.communicator());
            while (state.value("step") < kSteps) {
              const bool doomed = id == "0.1.0" && state.value("step") == kDieAt;
              if (doomed && death == Death::kAtAStepsStart) throw Doomed{};
              // While two train, slowly: the joiner comes in before the end.
              if (job.size() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(30));
              const auto taken = sampler.next(kBatch);
              const at::Tensor index =
                  torch::tensor(std::vector<int64_t>(taken->begin(), taken->end()));
              optimizer.zero_grad();
              torch::nn::functional::cross_entropy(model(bags(data.bags.index_select(0, index))),
                                                   data.labels.index_select(0, index))
                  .backward();
              optimizer.step();
              if (doomed) throw Doomed{};  // its gradients pushed, its step never finished
              client->step();
              state.value("step") += 1;
              if (job.rank() == 0) {
                const std::lock_guard<std::mutex> lock(mutex);
                world_at_step[state.value("step")] = job.size();
                weight_at_step[state.value("step")] = dense->weight.detach().clone();
                last_step = state.value("step");
              }
              state.commit();
            }
            if (job.rank() == 0) {
              const std::lock_guard<std::mutex> lock(mutex);
              final_dense = {dense->weight.detach().clone(), dense->bias.detach().clone()};
            }
          },
          run);
    } catch (const Doomed&) {
      store->set("elastic/exited/" + id, "signal 9");  // what its launcher would write
    } catch (const std::exception& error) {
      const std::lock_guard<std::mutex> lock(mutex);
      errors[id] = error.what();
    }
  };
  std::vector<std::thread> threads;
  for (const char* id : {"0.0.0", "0.1.0", "0.2.0"}) threads.emplace_back(worker, id);
  const auto start = std::chrono::steady_clock::now();
  while (last_step.load() <= kJoinAfter &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  threads.emplace_back(worker, "0.1.1");
  for (auto& thread : threads) thread.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, kStepTimeout / 2)
      << "the survivors waited for the dead trainer's step";
  for (const auto& [id, error] : errors) ADD_FAILURE() << id << ": " << error;
  ASSERT_TRUE(errors.empty());

  // The schedule: 3 trainers, 2 after the death, 3 again once the joiner came.
  ASSERT_EQ(world_at_step.size(), static_cast<size_t>(kSteps));
  EXPECT_EQ(world_at_step.at(kDieAt), 3);
  EXPECT_EQ(world_at_step.at(kDieAt + 1), 2);
  EXPECT_EQ(world_at_step.at(kSteps), 3);
  std::string schedule;
  for (const auto& [step, world] : world_at_step) {
    schedule += " " + std::to_string(step) + ":" + std::to_string(world);
  }
  SCOPED_TRACE("steps:worlds" + schedule);
  std::map<int64_t, at::Tensor> expected_weights;
  const auto [rows, dense] = reference(world_at_step, table, &expected_weights);
  for (const auto& [step, weight] : expected_weights) {
    ASSERT_TRUE(weight_at_step.at(step).allclose(weight, 1e-5, 1e-6))
        << "the dense weight differs first after step " << step << " by "
        << (weight_at_step.at(step) - weight).abs().max().item<float>();
  }
  ASSERT_EQ(final_dense.size(), 2u);
  EXPECT_TRUE(final_dense[0].allclose(dense->weight, 1e-5, 1e-6));
  EXPECT_TRUE(final_dense[1].allclose(dense->bias, 1e-5, 1e-6));
  auto reader = testing::make_client(servers.addresses(), 0, 3);
  ClientOptions reader_options = testing::client_options(servers.addresses(), 0, 3);
  reader_options.elastic = true;
  auto any_count = connect(reader_options);
  any_count->create_table(table);
  const at::Tensor trained = any_count->lookup("bags", at::arange(kRows, at::kLong));
  EXPECT_TRUE(trained.allclose(rows, 1e-5, 1e-6))
      << "max difference " << (trained - rows).abs().max().item<float>();
  EXPECT_FALSE(rows.allclose(initial_rows(table.initializer, at::arange(kRows, at::kLong), kDim)))
      << "training did not move";
}

INSTANTIATE_TEST_SUITE_P(
    TransportsAndDeaths, ElasticHybrid,
    ::testing::Combine(::testing::Values(Transport::kShared, Transport::kBytes),
                       ::testing::Values(Death::kAtAStepsStart, Death::kBeforeItsServerStep)),
    [](const auto& info) {
      return std::string(to_string(std::get<0>(info.param))) +
             (std::get<1>(info.param) == Death::kAtAStepsStart ? "_AtAStepsStart"
                                                               : "_BeforeItsServerStep");
    });

}  // namespace
}  // namespace elastic_hybrid
}  // namespace gradwire::ps
