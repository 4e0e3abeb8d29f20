#include "shuffle.h"

#include <numeric>
#include <random>

namespace gradwire::data::detail {

namespace {
// Uniform in [0, bound) by rejection (no modulo bias), bound > 0.
uint64_t draw_below(std::mt19937_64& engine, uint64_t bound) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t value = engine();
  while (value >= limit) value = engine();
  return value % bound;
}
}  // namespace

std::vector<size_t> permutation(size_t n, uint64_t seed, uint64_t epoch) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  // Mix seed and epoch so that (seed, epoch + 1) and (seed + 1, epoch) differ.
  std::seed_seq mixed{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                      static_cast<uint32_t>(epoch), static_cast<uint32_t>(epoch >> 32)};
  std::mt19937_64 engine(mixed);
  for (size_t i = n; i > 1; --i) {
    std::swap(order[i - 1], order[draw_below(engine, i)]);
  }
  return order;
}

}  // namespace gradwire::data::detail
