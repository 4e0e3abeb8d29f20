// The counter-based row initialiser (initializer.h).
//
// Note [row generator]: the 64-bit key of (seed, id, column) is splitmix64's finaliser applied in
// three rounds, folding in the seed, then the row id, then the column:
//   row_key   = mix(mix(seed + kSeedSalt) + (id + 1) * kGamma)
//   bits(c)   = mix(row_key + (c + 1) * kGamma)
// A uniform in [0, 1) is the top 53 bits of bits(c) over 2^53. Normal values come in pairs by
// Box-Muller: columns 2k and 2k + 1 use u1 = 1 - uniform(2k) in (0, 1] and u2 = uniform(2k + 1):
//   r = sqrt(-2 ln u1), column 2k = r cos(2 pi u2), column 2k + 1 = r sin(2 pi u2)
// so a column's value never depends on dim. Arithmetic is in double, rounded to float at the end.
#include "ps/core/initializer.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "common/mix.h"
#include "gradwire/common/error.h"

namespace gradwire::ps {
namespace {

constexpr uint64_t kGamma = kSplitmixGamma;
constexpr uint64_t kSeedSalt = 0x6772616477697265ULL;  // "gradwire"
constexpr double kTwoToMinus53 = 1.0 / 9007199254740992.0;
constexpr double kTwoPi = 6.283185307179586476925286766559;

inline uint64_t mix(uint64_t z) { return splitmix64_mix(z); }

inline uint64_t row_key(uint64_t seed, int64_t id) {
  return mix(mix(seed + kSeedSalt) + (static_cast<uint64_t>(id) + 1) * kGamma);
}

inline double uniform01(uint64_t key, int64_t column) {
  return static_cast<double>(mix(key + (static_cast<uint64_t>(column) + 1) * kGamma) >> 11) *
         kTwoToMinus53;
}

inline float uniform_value(uint64_t key, int64_t column, double scale) {
  return static_cast<float>((2.0 * uniform01(key, column) - 1.0) * scale);
}

// Columns `first` (even) and first + 1 of a normal row.
inline void normal_pair(uint64_t key, int64_t first, double scale, float* out) {
  const double u1 = 1.0 - uniform01(key, first);
  const double u2 = uniform01(key, first + 1);
  const double radius = std::sqrt(-2.0 * std::log(u1)) * scale;
  const double angle = kTwoPi * u2;
  out[0] = static_cast<float>(radius * std::cos(angle));
  out[1] = static_cast<float>(radius * std::sin(angle));
}

// Fills one row of `dim` values for the row with key `key`.
void fill_row(InitializerKind kind, double scale, uint64_t key, int64_t dim, float* out) {
  if (kind == InitializerKind::kUniform) {
    for (int64_t c = 0; c < dim; ++c) out[c] = uniform_value(key, c, scale);
    return;
  }
  int64_t c = 0;
  for (; c + 1 < dim; c += 2) normal_pair(key, c, scale, out + c);
  if (c < dim) {
    float pair[2];
    normal_pair(key, c, scale, pair);
    out[c] = pair[0];
  }
}

}  // namespace

at::Tensor initial_rows(const InitializerConfig& init, const at::Tensor& ids, int64_t dim) {
  if (!ids.defined() || ids.scalar_type() != at::kLong || ids.dim() != 1) {
    throw InvalidArgument("gradwire: initial_rows needs ids as an int64 1-D tensor, got " +
                          (ids.defined() ? std::string(ids.toString()) + " of " +
                                               std::to_string(ids.dim()) + " dimension(s)"
                                         : std::string("an undefined tensor")));
  }
  if (dim < 1) {
    throw InvalidArgument("gradwire: initial_rows needs dim >= 1, got " + std::to_string(dim));
  }
  const int64_t n = ids.numel();
  if (init.kind == InitializerKind::kZeros) return at::zeros({n, dim}, at::kFloat);
  at::Tensor rows = at::empty({n, dim}, at::kFloat);
  const at::Tensor ids_cpu = ids.to(at::kCPU).contiguous();
  const int64_t* id_data = ids_cpu.data_ptr<int64_t>();
  float* out = rows.data_ptr<float>();
  const InitializerKind kind = init.kind;
  const double scale = init.scale;
  const uint64_t seed = init.seed;
  const int64_t grain = std::max<int64_t>(1, 16384 / dim);
  at::parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      fill_row(kind, scale, row_key(seed, id_data[i]), dim, out + i * dim);
    }
  });
  return rows;
}

float initial_value(const InitializerConfig& init, int64_t id, int64_t column) {
  if (column < 0) {
    throw InvalidArgument("gradwire: initial_value needs column >= 0, got " +
                          std::to_string(column));
  }
  if (init.kind == InitializerKind::kZeros) return 0.0f;
  const uint64_t key = row_key(init.seed, id);
  if (init.kind == InitializerKind::kUniform) return uniform_value(key, column, init.scale);
  float pair[2];
  normal_pair(key, column - column % 2, init.scale, pair);
  return pair[column % 2];
}

}  // namespace gradwire::ps
