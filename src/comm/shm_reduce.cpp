#include "shm_reduce.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>

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

template <typename T, typename Combine>
void reduce_blocks(T* out, T* also_out, const void* const* inputs, int count, size_t n,
                   Combine combine, bool average) {
  using Acc = typename Accumulator<T>::type;
  Acc acc[kBlock];
  for (size_t begin = 0; begin < n; begin += kBlock) {
    const size_t len = std::min(kBlock, n - begin);
    const T* first = static_cast<const T*>(inputs[0]) + begin;
    for (size_t i = 0; i < len; ++i) acc[i] = static_cast<Acc>(first[i]);
    for (int k = 1; k < count; ++k) {
      const T* in = static_cast<const T*>(inputs[k]) + begin;
      for (size_t i = 0; i < len; ++i) acc[i] = combine(acc[i], static_cast<Acc>(in[i]));
    }
    if (average) {
      const Acc divisor = static_cast<Acc>(count);
      for (size_t i = 0; i < len; ++i) acc[i] = acc[i] / divisor;
    }
    T* dst = out + begin;
    for (size_t i = 0; i < len; ++i) dst[i] = static_cast<T>(acc[i]);
    if (also_out != nullptr) std::copy(dst, dst + len, also_out + begin);
  }
}

template <typename T>
void reduce_typed(ReduceOp op, void* out, const void* const* inputs, int count, size_t n,
                  void* also_out) {
  using Acc = typename Accumulator<T>::type;
  T* dst = static_cast<T*>(out);
  T* dst2 = static_cast<T*>(also_out);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      reduce_blocks<T>(
          dst, dst2, inputs, count, n, [](Acc a, Acc b) { return a + b; }, op == ReduceOp::kAvg);
      return;
    case ReduceOp::kMin:
      reduce_blocks<T>(
          dst, dst2, inputs, count, n, [](Acc a, Acc b) { return b < a ? b : a; }, false);
      return;
    case ReduceOp::kMax:
      reduce_blocks<T>(
          dst, dst2, inputs, count, n, [](Acc a, Acc b) { return a < b ? b : a; }, false);
      return;
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
            size_t n, void* also_out) {
  GRADWIRE_CHECK(count >= 1);
  switch (dtype) {
    case c10::kFloat:
      return reduce_typed<float>(op, out, inputs, count, n, also_out);
    case c10::kDouble:
      return reduce_typed<double>(op, out, inputs, count, n, also_out);
    case c10::kHalf:
      return reduce_typed<c10::Half>(op, out, inputs, count, n, also_out);
    case c10::kBFloat16:
      return reduce_typed<c10::BFloat16>(op, out, inputs, count, n, also_out);
    case c10::kChar:
      return reduce_typed<int8_t>(op, out, inputs, count, n, also_out);
    case c10::kByte:
      return reduce_typed<uint8_t>(op, out, inputs, count, n, also_out);
    case c10::kInt:
      return reduce_typed<int32_t>(op, out, inputs, count, n, also_out);
    case c10::kLong:
      return reduce_typed<int64_t>(op, out, inputs, count, n, also_out);
    default:
      GRADWIRE_CHECK(reducible(dtype));
  }
}

}  // namespace gradwire::shm
