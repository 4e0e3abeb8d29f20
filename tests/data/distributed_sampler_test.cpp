// DistributedSampler: disjoint, covering, equal shards; per-epoch shuffle; resume.
#include "gradwire/data/distributed_sampler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>
#include <sstream>

#include "gradwire/common/error.h"

namespace gradwire::data {
namespace {

DistributedSamplerOptions options_for(size_t replicas, size_t rank, bool drop_last,
                                      bool shuffle = true) {
  DistributedSamplerOptions options;
  options.world_size = static_cast<int>(replicas);
  options.rank = static_cast<int>(rank);
  options.drop_last = drop_last;
  options.shuffle = shuffle;
  options.seed = 42;
  return options;
}

TEST(DistributedSampler, ShardsAreDisjointCoveringAndEqual) {
  for (size_t size : {0u, 1u, 10u, 11u, 97u}) {
    for (size_t replicas : {1u, 2u, 3u, 4u}) {
      for (bool drop_last : {false, true}) {
        std::multiset<size_t> all;
        size_t shard_size = SIZE_MAX;
        for (size_t rank = 0; rank < replicas; ++rank) {
          const auto shard = shard_indices(size, options_for(replicas, rank, drop_last), 3);
          if (shard_size == SIZE_MAX) shard_size = shard.size();
          EXPECT_EQ(shard.size(), shard_size) << "equal shards";
          all.insert(shard.begin(), shard.end());
        }
        const std::set<size_t> distinct(all.begin(), all.end());
        if (drop_last) {
          EXPECT_EQ(shard_size, size / replicas);
          EXPECT_EQ(all.size(), distinct.size()) << "no index twice when dropping";
          EXPECT_EQ(distinct.size(), size - size % replicas);
        } else {
          EXPECT_EQ(shard_size, (size + replicas - 1) / replicas);
          EXPECT_EQ(distinct.size(), size) << "every index covered when padding";
          EXPECT_EQ(all.size() - distinct.size(), shard_size * replicas - size) << "pad only";
        }
        for (size_t index : distinct) EXPECT_LT(index, size);
      }
    }
  }
}

TEST(DistributedSampler, EpochShuffleDiffersAndIsDeterministic) {
  const auto epoch0 = shard_indices(1000, options_for(2, 1, false), 0);
  EXPECT_EQ(epoch0, shard_indices(1000, options_for(2, 1, false), 0));
  EXPECT_NE(epoch0, shard_indices(1000, options_for(2, 1, false), 1));
  auto other_seed = options_for(2, 1, false);
  other_seed.seed = 43;
  EXPECT_NE(epoch0, shard_indices(1000, other_seed, 0));
  const auto ordered = shard_indices(10, options_for(2, 1, false, /*shuffle=*/false), 5);
  EXPECT_EQ(ordered, (std::vector<size_t>{1, 3, 5, 7, 9}));

  DistributedSampler sampler(1000, options_for(2, 1, false));
  sampler.set_epoch(1);
  EXPECT_EQ(sampler.shard(), shard_indices(1000, options_for(2, 1, false), 1));
}

TEST(DistributedSampler, BatchesWalkTheShard) {
  DistributedSampler sampler(10, options_for(2, 0, false));
  std::vector<size_t> seen;
  while (auto batch = sampler.next(2)) seen.insert(seen.end(), batch->begin(), batch->end());
  EXPECT_EQ(seen, sampler.shard());
  sampler.reset();
  EXPECT_EQ(sampler.next(100)->size(), 5u);
  EXPECT_THROW(DistributedSampler(10, options_for(2, 2, false)), InvalidArgument);
}

TEST(DistributedSampler, ResumesFromASavedPosition) {
  DistributedSampler original(100, options_for(3, 2, false));
  original.set_epoch(4);
  original.next(5);
  original.next(5);
  const SamplerPosition position = original.position();
  EXPECT_EQ(position, (SamplerPosition{4, 10}));
  std::stringstream stream;
  {
    torch::serialize::OutputArchive archive;
    original.save(archive);
    archive.save_to(stream);
  }
  const auto expected = original.next(7);

  DistributedSampler resumed(100, options_for(3, 2, false));
  torch::serialize::InputArchive archive;
  archive.load_from(stream);
  resumed.load(archive);
  EXPECT_EQ(resumed.position(), position);
  resumed.reset();  // what a loader's begin() does: the restored position survives once
  EXPECT_EQ(resumed.next(7), expected);
  resumed.reset();
  EXPECT_EQ(resumed.position(), (SamplerPosition{4, 0}));

  DistributedSampler plain(100, options_for(3, 2, false));
  plain.restore(position);
  EXPECT_EQ(plain.next(7), expected);

  auto other = options_for(3, 2, false);
  other.seed = 1;
  DistributedSampler mismatched(100, other);
  torch::serialize::InputArchive again;
  stream.seekg(0);
  again.load_from(stream);
  EXPECT_THROW(mismatched.load(again), InvalidArgument);
}

TEST(DistributedSampler, PlugsIntoATorchDataLoader) {
  auto dataset = torch::data::datasets::TensorDataset(torch::arange(20).unsqueeze(1))
                     .map(torch::data::transforms::Stack<torch::data::TensorExample>());
  DistributedSampler sampler(20, options_for(2, 1, false));
  const std::vector<size_t> shard = sampler.shard();
  auto loader = torch::data::make_data_loader(std::move(dataset), std::move(sampler),
                                              torch::data::DataLoaderOptions().batch_size(4));
  std::vector<size_t> seen;
  for (auto& batch : *loader) {
    for (int64_t i = 0; i < batch.data.size(0); ++i) {
      seen.push_back(static_cast<size_t>(batch.data[i][0].item<int64_t>()));
    }
  }
  EXPECT_EQ(seen, shard);
}

}  // namespace
}  // namespace gradwire::data
