// The seeded row initialiser of parameter-server tables (docs/ps.md).
//
// Row `id` of a table depends only on (kind, scale, seed, id): every value comes from a
// counter-based generator (splitmix64 of the seed, the row id and the column), never from a
// sequential random stream. A table's content is therefore the same whatever the number of
// servers, whichever ids are asked together and in whichever order.
//
//   kNormal:  normal(0, scale), by Box-Muller over pairs of columns (2k, 2k + 1)
//   kUniform: uniform in [-scale, scale)
//   kZeros:   0
//
// Pure and thread safe; the work is spread over ATen's intra-op threads.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "gradwire/ps/table.h"

namespace gradwire::ps {

// Rows for global row ids `ids` (int64, 1-D, any values, duplicates fine) of a table with `dim`
// columns: a new float32 tensor [ids.numel(), dim]. InvalidArgument for a wrong dtype or rank or
// dim < 1.
at::Tensor initial_rows(const InitializerConfig& init, const at::Tensor& ids, int64_t dim);

// One value of the generator: column `column` of row `id` (what initial_rows puts there).
float initial_value(const InitializerConfig& init, int64_t id, int64_t column);

}  // namespace gradwire::ps
