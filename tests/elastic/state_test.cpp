// elastic::State: commit and restore in one process; sync between ranks (threads with worlds on
// one in-process store).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <future>
#include <numeric>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "comm/connect_world.h"
#include "comm/job_store_impl.h"
#include "gradwire/common/error.h"
#include "gradwire/data/distributed_sampler.h"
#include "gradwire/elastic/elastic.h"

namespace gradwire::elastic {
namespace {

TEST(ElasticState, RestoreGoesBackToTheLastCommit) {
  torch::manual_seed(0);
  torch::nn::Linear model(4, 2);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  State state;
  state.add("model", model);
  state.add("optimizer", optimizer);
  state.value("step") = 7;
  auto step = [&] {
    optimizer.zero_grad();
    model->forward(torch::ones({3, 4})).sum().backward();
    optimizer.step();
  };
  step();
  state.commit();
  EXPECT_EQ(state.commits(), 1);
  const auto committed = model->weight.detach().clone();
  step();
  state.value("step") = 9;
  EXPECT_FALSE(torch::equal(model->weight, committed));
  state.restore();
  EXPECT_TRUE(torch::equal(model->weight, committed));
  EXPECT_EQ(state.value("step"), 7);
  // The momentum buffer came back too: the next step equals the one taken after the commit.
  step();
  const auto again = model->weight.detach().clone();
  state.restore();
  step();
  EXPECT_TRUE(torch::equal(model->weight, again));
}

TEST(ElasticState, NamesAreUnique) {
  torch::nn::Linear model(2, 2);
  State state;
  state.add("model", model);
  EXPECT_THROW(state.add("model", model), InvalidArgument);
  EXPECT_THROW(state.add("a.b", model), InvalidArgument);
}

TEST(ElasticState, SyncBroadcastsTheRootsCommitAndReshards) {
  auto store = JobStore::in_process(std::chrono::seconds(20));
  constexpr int kRanks = 3;
  std::vector<std::future<std::tuple<at::Tensor, int64_t, uint64_t, int>>> ranks;
  for (int rank = 0; rank < kRanks; ++rank) {
    ranks.push_back(std::async(std::launch::async, [&, rank] {
      torch::manual_seed(100 + rank);  // every rank starts different
      torch::nn::Linear model(4, 2);
      data::DistributedSampler sampler(90, {});
      State state;
      state.add("model", model);
      state.add("sampler", sampler);
      if (rank == 0) {  // the root consumed 3 batches of 5 in a world of 2, then committed
        sampler.reshard(0, 2);
        for (int i = 0; i < 3; ++i) sampler.next(5);
        state.value("step") = 3;
        state.commit();
      }
      WorldInfo info;
      info.rank = rank;
      info.world_size = kRanks;
      info.local_rank = rank;
      info.local_world_size = kRanks;
      info.master_addr = "127.0.0.1";
      InitOptions options;
      options.backend = "gloo";
      options.timeout = std::chrono::seconds(20);
      auto world = connect_world_on_store(
          c10::make_intrusive<c10d::PrefixStore>("w", c10d_store_of(*store)), info, options, {});
      state.sync(*world->communicator(), 0);
      return std::make_tuple(model->weight.detach().clone(), state.value("step"),
                             sampler.consumed(), sampler.rank());
    }));
  }
  std::vector<std::tuple<at::Tensor, int64_t, uint64_t, int>> results;
  for (auto& future : ranks) results.push_back(future.get());
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_TRUE(torch::equal(std::get<0>(results[rank]), std::get<0>(results[0])));
    EXPECT_EQ(std::get<1>(results[rank]), 3);
    EXPECT_EQ(std::get<2>(results[rank]), 30u);  // 3 batches of 5 on 2 ranks
    EXPECT_EQ(std::get<3>(results[rank]), rank);
  }
}

// An object using both optional hooks: what every rank did, gathered at each commit, and the
// generation it was resharded into.
struct Gathering {
  int64_t mine = 0;      // this rank's own count
  int64_t gathered = 0;  // the sum over the ranks at the last commit (what save() keeps)
  int rank = -1, world_size = 0;
  int64_t generation = -1;
  void save(torch::serialize::OutputArchive& archive) const {
    archive.write("gathered", torch::tensor(gathered), /*is_buffer=*/true);
  }
  void load(torch::serialize::InputArchive& archive) {
    torch::Tensor value;
    archive.read("gathered", value, /*is_buffer=*/true);
    gathered = value.item<int64_t>();
  }
  void reshard(int new_rank, int new_world_size, int64_t new_generation) {
    rank = new_rank;
    world_size = new_world_size;
    generation = new_generation;
  }
  void prepare_commit(Communicator& communicator) {
    at::Tensor sum = torch::tensor(mine);
    communicator.allreduce(sum)->wait();
    gathered = sum.item<int64_t>();
  }
};

TEST(ElasticState, RunCallsPrepareCommitOnEveryRankAndReshardsWithTheGeneration) {
  auto store = JobStore::in_process(std::chrono::seconds(20));
  constexpr int kRanks = 3;
  std::vector<std::future<Gathering>> workers;
  for (int slot = 0; slot < kRanks; ++slot) {
    workers.push_back(std::async(std::launch::async, [&, slot] {
      std::unique_ptr<JobStore> own = store->shared();
      Gathering object;
      State state;
      state.add("object", object);
      RunOptions options;
      options.store = own.get();
      options.worker_id = "0." + std::to_string(slot) + ".0";
      options.initial_workers = kRanks;
      options.init.backend = "gloo";
      options.init.timeout = std::chrono::seconds(20);
      options.verbose = false;
      run(state, [&](Context& job) {
        EXPECT_EQ(object.rank, job.rank());
        EXPECT_EQ(object.world_size, kRanks);
        EXPECT_EQ(object.generation, job.generation().number);
        for (int step = 1; step <= 2; ++step) {
          object.mine = step * (job.rank() + 1);
          state.commit();
          EXPECT_EQ(object.gathered, step * 6);
        }
      }, options);
      return object;
    }));
  }
  for (auto& worker : workers) EXPECT_EQ(worker.get().gathered, 12);
}

TEST(DistributedSamplerReshard, EverySampleOfTheEpochIsSeenOnceAcrossAChangeOfWorld) {
  constexpr size_t kSize = 60;
  data::DistributedSamplerOptions options;
  options.seed = 9;
  std::vector<data::DistributedSampler> three;
  for (int rank = 0; rank < 3; ++rank) {
    options.rank = rank;
    options.world_size = 3;
    three.emplace_back(kSize, options);
  }
  std::vector<size_t> seen;
  for (int step = 0; step < 4; ++step) {
    for (auto& sampler : three) {
      auto batch = sampler.next(2);
      seen.insert(seen.end(), batch->begin(), batch->end());
    }
  }
  EXPECT_EQ(three[0].consumed(), 24u);
  // Rank 1 dies; the two others split the rest.
  std::vector<data::DistributedSampler> two = {three[0], three[2]};
  two[0].reshard(0, 2);
  two[1].reshard(1, 2);
  while (true) {
    auto a = two[0].next(3);
    auto b = two[1].next(3);
    if (!a || !b) break;
    seen.insert(seen.end(), a->begin(), a->end());
    seen.insert(seen.end(), b->begin(), b->end());
  }
  std::sort(seen.begin(), seen.end());
  std::vector<size_t> all(kSize);
  std::iota(all.begin(), all.end(), size_t{0});
  EXPECT_EQ(seen, all);
}

}  // namespace
}  // namespace gradwire::elastic
