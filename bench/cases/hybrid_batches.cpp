#include "cases/hybrid_batches.h"

#include "cases/hybrid_settings.h"
#include "gradwire/common/error.h"

namespace gradwire::bench {

HybridBatchGenerator::HybridBatchGenerator(std::uint64_t seed, int trainer, std::int64_t rows)
    : state_(seed * 1000003u + static_cast<std::uint64_t>(trainer)), rows_(rows) {
  if (rows < 1) throw InvalidArgument("a hybrid batch needs at least one embedding row");
}

std::uint64_t HybridBatchGenerator::next() {
  state_ += 0x9E3779B97F4A7C15ull;
  std::uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::int64_t HybridBatchGenerator::uniform(std::int64_t low, std::int64_t high) {
  const auto span = static_cast<std::uint64_t>(high - low) + 1;
  return low + static_cast<std::int64_t>(next() % span);
}

HybridBatch HybridBatchGenerator::next_batch() {
  HybridBatch batch;
  const std::int64_t count = uniform(kHybridMinIds, kHybridMaxIds);
  batch.ids.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) batch.ids.push_back(uniform(0, rows_ - 1));
  for (std::int64_t start = 0; start < count; start += uniform(1, kHybridMaxBag)) {
    batch.offsets.push_back(start);
  }
  for (std::size_t i = 0; i < batch.offsets.size(); ++i) {
    batch.targets.push_back(uniform(0, kHybridClasses - 1));
  }
  return batch;
}

std::vector<HybridBatch> HybridBatchGenerator::next_epoch(int count) {
  std::vector<HybridBatch> batches;
  batches.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) batches.push_back(next_batch());
  return batches;
}

}  // namespace gradwire::bench
