// The tensor wire format of the parameter-server service: an at::Tensor travels as a v1::Tensor
// (dtype, shape, raw little-endian row-major bytes), never as per-element repeated fields.
//
// Decoding is the server's first line of defence against malformed requests: it checks the
// dtype, every dimension (>= 0), the element count (bounded, no overflow), that the byte length
// is exactly numel x element size, and the dtype and rank the caller expects; anything else is
// InvalidArgument naming the field ("lookup.ids: ..."). Nothing is read past the message.
//
// Thread safety: pure functions. Blocking: none.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <string>

#include "rpc/proto/ps.pb.h"

namespace gradwire::rpc {

class SharedRegionCache;

namespace v1 = ::gradwire::ps::v1;

// Most dimensions a wire tensor may have.
inline constexpr int kMaxWireRank = 8;
// Default bound on the elements of one decoded tensor (gRPC's message size bounds it first).
inline constexpr int64_t kMaxWireElements = int64_t{1} << 34;

// The wire dtype of a tensor dtype: Float -> FLOAT32, Long -> INT64, Half -> FLOAT16, BFloat16 ->
// BFLOAT16 (dense pushes and pulls may travel in 16 bits); InvalidArgument naming `field` for any
// other.
v1::DType to_wire_dtype(at::ScalarType type, const std::string& field);
// "float32", "int64", "unspecified", "unknown(7)": for messages.
std::string wire_dtype_name(int dtype);

// Writes `tensor` (float32, float16, bfloat16 or int64, any layout; CPU) into `out`. A contiguous tensor costs one
// memcpy of its bytes. InvalidArgument naming `field` for other dtypes or non-CPU tensors.
void encode_tensor(const at::Tensor& tensor, v1::Tensor* out, const std::string& field = "tensor");
v1::Tensor encode_tensor(const at::Tensor& tensor, const std::string& field = "tensor");
// Sets `out`'s dtype and shape for a tensor of `sizes` and `type` (a wire dtype: InvalidArgument
// naming `field` otherwise), sizes its bytes and returns a contiguous tensor viewing them, to be
// filled in place: encoding without a tensor between the values and the wire. The view is valid
// while `out` lives and its bytes are not changed otherwise.
at::Tensor tensor_in_message(v1::Tensor* out, at::IntArrayRef sizes, at::ScalarType type,
                             const std::string& field);
// Writes `tensor`'s dtype and shape into `out` and `where` its bytes lie in shared memory
// (SharedRegions::find), no bytes: what a server on the trainer's host reads in place.
void encode_shared_tensor(const at::Tensor& tensor, const v1::SharedBytes& where, v1::Tensor* out,
                          const std::string& field = "tensor");

// What a decoder expects of a wire tensor. Unset members accept anything valid.
struct TensorExpectation {
  std::optional<at::ScalarType> dtype;  // at::kFloat or at::kLong
  int rank = -1;                        // number of dimensions; -1: any (up to kMaxWireRank)
  int64_t max_elements = kMaxWireElements;
  // View the message's bytes instead of copying them, when they are float32 or int64 and aligned
  // for their dtype (else a copy as usual): the tensor is then valid only while the message lives
  // unchanged. For a reader that copies the values elsewhere at once (a lookup's rows into their
  // places in the answer).
  bool in_place = false;
};

// A new contiguous CPU tensor holding a copy of the message's bytes (one memcpy; none with
// expect.in_place, see there). float16 and
// bfloat16 arrive widened to float32 (a float32 expectation accepts them). A message whose bytes
// are shared (Tensor.shared) is a view of them through `shared` (no copy; widened ones are
// copies); without `shared` it is refused. Throws InvalidArgument naming `field` when the message
// is malformed or does not meet `expect`.
at::Tensor decode_tensor(const v1::Tensor& message, const std::string& field,
                         const TensorExpectation& expect = {},
                         SharedRegionCache* shared = nullptr);

}  // namespace gradwire::rpc
