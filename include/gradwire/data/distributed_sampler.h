// DistributedSampler: a libtorch sampler (torch::data::samplers::Sampler<>) that gives each rank
// a disjoint shard of a dataset's indices, all shards of equal size, reshuffled every epoch.
//
// Each epoch the indices 0..size-1 are permuted from (seed, epoch) (or kept in order when
// shuffle is off), made a multiple of world_size long, and rank r takes positions r,
// r + world_size, r + 2 * world_size, ... Making the length a multiple:
//   drop_last = false (default): pad by repeating indices from the start of the permuted list,
//                                so every index is seen and a few are seen twice;
//   drop_last = true:            drop the last size % world_size indices of the permuted list,
//                                so no index repeats and a few are not seen this epoch.
// Every rank gets shard_size() indices, so DDP ranks take the same number of steps.
//
// Epochs: call set_epoch(e) before each epoch on every rank (the same e); reset() (called by
// torch::data loaders at the start of each pass) rewinds to the start of the current epoch, except
// right after restore()/load(), when it keeps the restored position once so a resumed loader
// continues where the saved one stopped.
//
// Not thread safe (libtorch's loaders call a sampler under their own lock).
#pragma once

#include <torch/data/samplers/base.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace gradwire::data {

struct DistributedSamplerOptions {
  // This rank (0-based) and the number of ranks sharing the dataset (PyTorch's num_replicas), as
  // in gradwire::WorldInfo. Default: one rank.
  int rank = 0;
  int world_size = 1;
  // Permute the indices every epoch. Default true.
  bool shuffle = true;
  // Base of the per-epoch permutation; the same on every rank. Default 0.
  uint64_t seed = 0;
  // See the header comment. Default false (pad).
  bool drop_last = false;
};

// Where a sampler is: epoch, where in the epoch's permuted list the current split among the
// ranks began (0 unless reshard() split the rest of an epoch again), and the number of this
// rank's indices already handed out since.
struct SamplerPosition {
  uint64_t epoch = 0;
  uint64_t next_index = 0;
  uint64_t start = 0;
  bool operator==(const SamplerPosition& other) const {
    return epoch == other.epoch && next_index == other.next_index && start == other.start;
  }
};

// Pure: rank's indices for `epoch`, as DistributedSampler hands them out: of the epoch's
// permuted list from position `start` on (the part not yet consumed when the ranks changed),
// made a multiple of world_size (padding repeats from `start`), positions rank, rank +
// world_size, ... Throws InvalidArgument unless 0 <= rank < world_size.
std::vector<size_t> shard_indices(size_t dataset_size, const DistributedSamplerOptions& options,
                                  uint64_t epoch, uint64_t start = 0);

class DistributedSampler : public torch::data::samplers::Sampler<> {
 public:
  DistributedSampler(size_t dataset_size, DistributedSamplerOptions options = {});

  // Selects the epoch (reseeds the shuffle) and rewinds to its start.
  void set_epoch(uint64_t epoch);
  uint64_t epoch() const { return epoch_; }

  // torch::data::samplers::Sampler
  void reset(torch::optional<size_t> new_size = torch::nullopt) override;
  torch::optional<std::vector<size_t>> next(size_t batch_size) override;
  // Writes/reads "epoch", "next_index", "start", "world_size", "dataset_size" and "seed" (int64
  // tensors; "start" and "world_size" may be absent from older files). load() throws
  // InvalidArgument when the saved dataset size or seed differ from this sampler's. A sampler
  // saved by a rank of another world size resumes at the first sample of the epoch that world
  // had not consumed (split among this sampler's ranks from there).
  // With the same world size, load() keeps this sampler's rank; call reshard() to change it.
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  SamplerPosition position() const { return SamplerPosition{epoch_, next_}; }
  // Moves to `position` (reshuffling for its epoch); the next reset() keeps it.
  void restore(const SamplerPosition& position);

  // The samples of this epoch every rank together has taken, when all ranks took the same number
  // of batches: start + next_index * world_size.
  uint64_t consumed() const;
  // Splits the rest of the epoch (from consumed()) among `world_size` ranks and becomes `rank`:
  // the elastic case (gradwire/elastic), where ranks leave or join mid-epoch and every sample
  // not yet consumed is still seen once this epoch. The next reset() keeps the position.
  void reshard(int rank, int world_size);
  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }

  // This rank's indices for the current epoch.
  const std::vector<size_t>& shard() const { return shard_; }
  size_t shard_size() const { return shard_.size(); }

 private:
  size_t dataset_size_;
  DistributedSamplerOptions options_;
  uint64_t epoch_ = 0;
  std::vector<size_t> shard_;
  size_t next_ = 0;
  uint64_t start_ = 0;
  bool keep_position_on_reset_ = false;
};

}  // namespace gradwire::data
