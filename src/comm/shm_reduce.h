// Elementwise reduction kernels of the shm backend: out[i] = op over k of inputs[k][i].
// Pure functions over raw memory. Half and bfloat16 accumulate in float32 and round once.
// `out` may be one of the inputs (each block is read completely before it is written).
#pragma once

#include <c10/core/ScalarType.h>

#include <cstddef>

#include "gradwire/comm/communicator.h"

namespace gradwire::shm {

// True when reduce() handles `dtype` (float, double, half, bfloat16, int8, uint8, int32, int64).
bool reducible(c10::ScalarType dtype);

// Reduces `count` input arrays of `n` elements of `dtype` into `out`, and into `also_out` too
// when it is not null (one pass writing two copies). kAvg divides by `count` (floating types
// only; integers are rejected by the caller). Precondition: reducible(dtype).
void reduce(c10::ScalarType dtype, ReduceOp op, void* out, const void* const* inputs, int count,
            size_t n, void* also_out = nullptr);

}  // namespace gradwire::shm
