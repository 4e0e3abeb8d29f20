#include "comm/core/reduce_kernels.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "gradwire/common/error.h"

namespace gradwire::shm {

namespace {

// Elements per block: the accumulator stays in L1 while the inputs stream through.
constexpr size_t kBlock = 512;

template <typename T>
struct Accumulator {
  using type = T;
};
template <>
struct Accumulator<c10::Half> {
  using type = float;
};
template <>
struct Accumulator<c10::BFloat16> {
  using type = float;
};

void store_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

// memcpy with non-temporal stores for the 16-byte aligned middle; no fence.
void stream_copy(char* out, const char* in, size_t bytes) {
#if defined(__x86_64__)
  const size_t head = std::min(bytes, (16 - (reinterpret_cast<uintptr_t>(out) & 15)) & size_t{15});
  std::memcpy(out, in, head);
  out += head;
  in += head;
  bytes -= head;
  const size_t body = bytes & ~size_t{63};
  for (size_t i = 0; i < body; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 48), d);
  }
  std::memcpy(out + body, in + body, bytes - body);
#else
  std::memcpy(out, in, bytes);
#endif
}

// One block: result[i] = op over the inputs at begin + i, divided by `count` for kAverage.
// Two inputs (the common case) are combined in one fused pass; more go through an accumulator
// that stays in L1, the last input fused with the final conversion.
template <typename T, bool kAverage, typename Combine>
void reduce_block(T* result, const void* const* inputs, int count, size_t begin, size_t len,
                  Combine combine) {
  using Acc = typename Accumulator<T>::type;
  const Acc divisor = static_cast<Acc>(count);
  auto finish = [divisor](Acc value) {
    if constexpr (kAverage) value = value / divisor;
    return static_cast<T>(value);
  };
  const T* first = static_cast<const T*>(inputs[0]) + begin;
  if (count == 1) {
    for (size_t i = 0; i < len; ++i) result[i] = finish(static_cast<Acc>(first[i]));
    return;
  }
  const T* last = static_cast<const T*>(inputs[count - 1]) + begin;
  if (count == 2) {
    for (size_t i = 0; i < len; ++i) {
      result[i] = finish(combine(static_cast<Acc>(first[i]), static_cast<Acc>(last[i])));
    }
    return;
  }
  alignas(64) Acc acc[kBlock];
  for (size_t i = 0; i < len; ++i) acc[i] = static_cast<Acc>(first[i]);
  for (int k = 1; k + 1 < count; ++k) {
    const T* in = static_cast<const T*>(inputs[k]) + begin;
    for (size_t i = 0; i < len; ++i) acc[i] = combine(acc[i], static_cast<Acc>(in[i]));
  }
  for (size_t i = 0; i < len; ++i) result[i] = finish(combine(acc[i], static_cast<Acc>(last[i])));
}

template <typename T, bool kAverage, typename Combine>
void reduce_blocks(T* out, T* also_out, const void* const* inputs, int count, size_t n,
                   Combine combine, Stores out_stores) {
  const bool streaming = out_stores == Stores::kStreaming;
  alignas(64) T staged[kBlock];
  for (size_t begin = 0; begin < n; begin += kBlock) {
    const size_t len = std::min(kBlock, n - begin);
    // Computed into a local block (which aliases nothing, so the loops vectorise without
    // overlap checks) and stored from there: every input of the block is read before `out` is
    // written, and `out` may be an input.
    reduce_block<T, kAverage>(staged, inputs, count, begin, len, combine);
    if (streaming) {
      stream_copy(reinterpret_cast<char*>(out + begin), reinterpret_cast<const char*>(staged),
                  len * sizeof(T));
    } else {
      std::memcpy(out + begin, staged, len * sizeof(T));
    }
    if (also_out != nullptr) std::memcpy(also_out + begin, staged, len * sizeof(T));
  }
  if (streaming) store_fence();
}

template <typename T>
void reduce_typed(ReduceOp op, void* out, const void* const* inputs, int count, size_t n,
                  void* also_out, Stores out_stores) {
  using Acc = typename Accumulator<T>::type;
  T* dst = static_cast<T*>(out);
  T* dst2 = static_cast<T*>(also_out);
  auto sum = [](Acc a, Acc b) { return a + b; };
  switch (op) {
    case ReduceOp::kSum:
      return reduce_blocks<T, false>(dst, dst2, inputs, count, n, sum, out_stores);
    case ReduceOp::kAvg:
      return reduce_blocks<T, true>(dst, dst2, inputs, count, n, sum, out_stores);
    case ReduceOp::kMin:
      return reduce_blocks<T, false>(
          dst, dst2, inputs, count, n, [](Acc a, Acc b) { return b < a ? b : a; }, out_stores);
    case ReduceOp::kMax:
      return reduce_blocks<T, false>(
          dst, dst2, inputs, count, n, [](Acc a, Acc b) { return a < b ? b : a; }, out_stores);
  }
}

}  // namespace

bool reducible(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kFloat:
    case c10::kDouble:
    case c10::kHalf:
    case c10::kBFloat16:
    case c10::kChar:
    case c10::kByte:
    case c10::kInt:
    case c10::kLong:
      return true;
    default:
      return false;
  }
}

void reduce(c10::ScalarType dtype, ReduceOp op, void* out, const void* const* inputs, int count,
            size_t n, void* also_out, Stores out_stores) {
  GRADWIRE_CHECK(count >= 1);
  switch (dtype) {
    case c10::kFloat:
      return reduce_typed<float>(op, out, inputs, count, n, also_out, out_stores);
    case c10::kDouble:
      return reduce_typed<double>(op, out, inputs, count, n, also_out, out_stores);
    case c10::kHalf:
      return reduce_typed<c10::Half>(op, out, inputs, count, n, also_out, out_stores);
    case c10::kBFloat16:
      return reduce_typed<c10::BFloat16>(op, out, inputs, count, n, also_out, out_stores);
    case c10::kChar:
      return reduce_typed<int8_t>(op, out, inputs, count, n, also_out, out_stores);
    case c10::kByte:
      return reduce_typed<uint8_t>(op, out, inputs, count, n, also_out, out_stores);
    case c10::kInt:
      return reduce_typed<int32_t>(op, out, inputs, count, n, also_out, out_stores);
    case c10::kLong:
      return reduce_typed<int64_t>(op, out, inputs, count, n, also_out, out_stores);
    default:
      GRADWIRE_CHECK(reducible(dtype));
  }
}

void copy_bytes(void* out, const void* in, size_t bytes, Stores out_stores) {
  if (out_stores == Stores::kStreaming) {
    stream_copy(static_cast<char*>(out), static_cast<const char*>(in), bytes);
    store_fence();
  } else {
    std::memcpy(out, in, bytes);
  }
}

}  // namespace gradwire::shm
