#include "gradwire/data/distributed_sampler.h"

#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "gradwire/common/error.h"
#include "shuffle.h"

namespace gradwire::data {

std::vector<size_t> shard_indices(size_t dataset_size, const DistributedSamplerOptions& options,
                                  uint64_t epoch, uint64_t start) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    throw InvalidArgument("gradwire: DistributedSampler rank " + std::to_string(options.rank) +
                          " needs 0 <= rank < world_size (" + std::to_string(options.world_size) +
                          ")");
  }
  std::vector<size_t> order;
  if (options.shuffle) {
    order = detail::permutation(dataset_size, options.seed, epoch);
  } else {
    order.resize(dataset_size);
    std::iota(order.begin(), order.end(), size_t{0});
  }
  order.erase(order.begin(),
              order.begin() + static_cast<std::ptrdiff_t>(std::min<uint64_t>(start, order.size())));
  const size_t remaining = order.size();
  const auto replicas = static_cast<size_t>(options.world_size);
  if (options.drop_last) {
    order.resize(remaining - remaining % replicas);
  } else if (remaining > 0) {
    const size_t padded = (remaining + replicas - 1) / replicas * replicas;
    for (size_t i = 0; order.size() < padded; ++i) order.push_back(order[i % remaining]);
  }
  std::vector<size_t> shard;
  shard.reserve(order.size() / replicas);
  for (auto i = static_cast<size_t>(options.rank); i < order.size(); i += replicas)
    shard.push_back(order[i]);
  return shard;
}

DistributedSampler::DistributedSampler(size_t dataset_size, DistributedSamplerOptions options)
    : dataset_size_(dataset_size), options_(options) {
  shard_ = shard_indices(dataset_size_, options_, epoch_);
}

void DistributedSampler::set_epoch(uint64_t epoch) {
  epoch_ = epoch;
  start_ = 0;
  shard_ = shard_indices(dataset_size_, options_, epoch_);
  next_ = 0;
  keep_position_on_reset_ = false;
}

void DistributedSampler::reset(torch::optional<size_t> new_size) {
  if (new_size && *new_size != dataset_size_) {
    dataset_size_ = *new_size;
    shard_ = shard_indices(dataset_size_, options_, epoch_, start_);
    keep_position_on_reset_ = false;
  }
  if (keep_position_on_reset_) {
    keep_position_on_reset_ = false;
    return;
  }
  next_ = 0;
}

torch::optional<std::vector<size_t>> DistributedSampler::next(size_t batch_size) {
  if (next_ >= shard_.size()) return torch::nullopt;
  const size_t end = std::min(shard_.size(), next_ + batch_size);
  std::vector<size_t> batch(shard_.begin() + static_cast<std::ptrdiff_t>(next_),
                            shard_.begin() + static_cast<std::ptrdiff_t>(end));
  next_ = end;
  return batch;
}

uint64_t DistributedSampler::consumed() const {
  return start_ + static_cast<uint64_t>(next_) * static_cast<uint64_t>(options_.world_size);
}

void DistributedSampler::reshard(int rank, int world_size) {
  DistributedSamplerOptions options = options_;
  options.rank = rank;
  options.world_size = world_size;
  const uint64_t start = consumed();
  shard_ = shard_indices(dataset_size_, options, epoch_, start);  // checks rank and world size
  options_ = options;
  start_ = start;
  next_ = 0;
  keep_position_on_reset_ = true;
}

void DistributedSampler::restore(const SamplerPosition& position) {
  set_epoch(position.epoch);
  start_ = position.start;
  shard_ = shard_indices(dataset_size_, options_, epoch_, start_);
  if (position.next_index > shard_.size()) {
    throw InvalidArgument("gradwire: DistributedSampler position " +
                          std::to_string(position.next_index) + " is past the shard of " +
                          std::to_string(shard_.size()) + " indices");
  }
  next_ = position.next_index;
  keep_position_on_reset_ = true;
}

void DistributedSampler::save(torch::serialize::OutputArchive& archive) const {
  auto value = [](uint64_t v) { return torch::tensor(static_cast<int64_t>(v), torch::kInt64); };
  archive.write("epoch", value(epoch_), /*is_buffer=*/true);
  archive.write("next_index", value(next_), true);
  archive.write("start", value(start_), true);
  archive.write("world_size", value(static_cast<uint64_t>(options_.world_size)), true);
  archive.write("dataset_size", value(dataset_size_), true);
  archive.write("seed", value(options_.seed), true);
}

void DistributedSampler::load(torch::serialize::InputArchive& archive) {
  auto value = [&](const char* key) {
    torch::Tensor tensor;
    archive.read(key, tensor, /*is_buffer=*/true);
    return static_cast<uint64_t>(tensor.item<int64_t>());
  };
  const uint64_t saved_size = value("dataset_size");
  const uint64_t saved_seed = value("seed");
  if (saved_size != dataset_size_ || saved_seed != options_.seed) {
    throw InvalidArgument("gradwire: the saved DistributedSampler was for " +
                          std::to_string(saved_size) + " samples with seed " +
                          std::to_string(saved_seed) + "; this one has " +
                          std::to_string(dataset_size_) + " samples and seed " +
                          std::to_string(options_.seed) + ". Resume with the same data and seed.");
  }
  auto optional_value = [&](const char* key, uint64_t absent) {
    torch::Tensor tensor;
    if (!archive.try_read(key, tensor, /*is_buffer=*/true)) return absent;
    return static_cast<uint64_t>(tensor.item<int64_t>());
  };
  const uint64_t start = optional_value("start", 0);
  const auto saved_world = optional_value("world_size", options_.world_size);
  const uint64_t next_index = value("next_index");
  if (saved_world == static_cast<uint64_t>(options_.world_size)) {
    restore(SamplerPosition{value("epoch"), next_index, start});
  } else {  // another world size: from the first sample that world had not consumed
    restore(SamplerPosition{value("epoch"), 0, start + next_index * saved_world});
  }
}

}  // namespace gradwire::data
