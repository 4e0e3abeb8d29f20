// The batches of `gradwire-bench hybrid`, as PyTorch's DDP + RPC benchmark draws them: per batch a
// number of ids uniform in [20, 50], each id uniform in [0, rows); bag offsets from 0 advancing by
// a step uniform in [1, 10] while below the number of ids (the batch size is the number of
// offsets); targets uniform in [0, 8). Pure and deterministic.
//
// The numbers come from SplitMix64 seeded with seed * 1000003 + trainer (mod 2^64); uniform(lo,
// hi) = lo + next() % (hi - lo + 1); per batch they are drawn in this order: the id count, the
// ids, the offset steps, the targets. bench/reference/hybrid_reference.py draws the same numbers,
// so gradwire and the PyTorch reference train on identical batches.
#pragma once

#include <cstdint>
#include <vector>

namespace gradwire::bench {

struct HybridBatch {
  std::vector<std::int64_t> ids;      // 20..50 ids in [0, rows)
  std::vector<std::int64_t> offsets;  // starts of the bags; offsets[0] == 0, increasing
  std::vector<std::int64_t> targets;  // one class in [0, 8) per bag
  std::int64_t size() const { return static_cast<std::int64_t>(offsets.size()); }
};

class HybridBatchGenerator {
 public:
  // Throws InvalidArgument when rows < 1.
  HybridBatchGenerator(std::uint64_t seed, int trainer, std::int64_t rows);

  // The next batch of this trainer's stream.
  HybridBatch next_batch();
  // The next `count` batches (an epoch).
  std::vector<HybridBatch> next_epoch(int count);

  // The raw stream (exposed for the cross-language check in the tests).
  std::uint64_t next();
  std::int64_t uniform(std::int64_t low, std::int64_t high);  // inclusive

 private:
  std::uint64_t state_;
  std::int64_t rows_;
};

}  // namespace gradwire::bench
