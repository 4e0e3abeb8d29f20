// Elementwise reduction kernels and copies of the shm backend: out[i] = op over k of inputs[k][i].
// Pure functions over raw memory. Half and bfloat16 accumulate in float32 and round once.
// `out` may be one of the inputs (each block is read completely before it is written).
//
// Streaming stores (Stores::kStreaming) write `out` with non-temporal stores: they skip the read
// for ownership of each destination line and do not evict other data, which pays for tensors much
// larger than the caches and costs for small ones (the result is not in cache afterwards). Such
// stores are weakly ordered: the functions end with a store fence, so a following release store
// (a post, shm/sync.h) publishes them.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstddef>

#include "gradwire/comm/communicator.h"

namespace gradwire::shm {

enum class Stores {
  kCached,     // ordinary stores
  kStreaming,  // non-temporal stores for `out` (x86-64; elsewhere ordinary ones)
};

// True when reduce() handles `dtype` (float, double, half, bfloat16, int8, uint8, int32, int64).
bool reducible(c10::ScalarType dtype);

// Reduces `count` input arrays of `n` elements of `dtype` into `out`, and into `also_out` too
// when it is not null (one pass writing two copies; `also_out` always with ordinary stores).
// kAvg divides by `count` (floating types only; integers are rejected by the caller).
// Precondition: reducible(dtype).
void reduce(c10::ScalarType dtype, ReduceOp op, void* out, const void* const* inputs, int count,
            size_t n, void* also_out = nullptr, Stores out_stores = Stores::kCached);

// memcpy, with streaming stores when asked (see above). Buffers must not overlap.
void copy_bytes(void* out, const void* in, size_t bytes, Stores out_stores);

}  // namespace gradwire::shm
