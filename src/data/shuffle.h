// Deterministic permutations for samplers and readers: Fisher-Yates over std::mt19937_64 with our
// own bounded draw (std::uniform_int_distribution differs between standard libraries, and a
// resumed job must see the same order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gradwire::data::detail {

// A permutation of 0..n-1, a pure function of (n, seed, epoch).
std::vector<size_t> permutation(size_t n, uint64_t seed, uint64_t epoch);

}  // namespace gradwire::data::detail
