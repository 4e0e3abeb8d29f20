// splitmix64's finalizer: the one home in the library of the 64-bit mix that its hashes of an
// index use (the PS row generator, ps/core/initializer.cpp; the alternating timeline's windows,
// timeline.cpp). Pure.
#pragma once

#include <cstdint>

namespace gradwire {

// splitmix64's increment (the golden ratio's 64-bit fraction).
inline constexpr uint64_t kSplitmixGamma = 0x9E3779B97F4A7C15ULL;

// A bijection of 64-bit words in which every input bit moves every output bit (Steele, Lea and
// Flood's splitmix64 finalizer).
constexpr uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace gradwire
