#include "rpc/wire.h"

#include <cstring>
#include <sstream>

#include "gradwire/common/error.h"
#include "rpc/shared_memory.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the wire format is little-endian; a big-endian host would need a byte swap here"
#endif

namespace gradwire::rpc {
namespace {

[[noreturn]] void throw_malformed(const std::string& field, const std::string& what) {
  throw InvalidArgument("gradwire: malformed tensor '" + field + "': " + what +
                        ". Tensors travel as dtype, shape and exactly numel x element size "
                        "little-endian bytes; check the client's gradwire version.");
}

std::string shape_text(const v1::Tensor& message) {
  std::ostringstream out;
  out << "[";
  for (int i = 0; i < message.shape_size(); ++i) out << (i ? ", " : "") << message.shape(i);
  out << "]";
  return out.str();
}

at::ScalarType to_scalar_type(v1::DType dtype) {
  switch (dtype) {
    case v1::FLOAT32:
      return at::kFloat;
    case v1::FLOAT16:
      return at::kHalf;
    case v1::BFLOAT16:
      return at::kBFloat16;
    default:
      return at::kLong;
  }
}

int64_t element_size(v1::DType dtype) {
  return dtype == v1::FLOAT32 ? 4 : dtype == v1::INT64 ? 8 : 2;
}

bool is_16_bit_float(int dtype) { return dtype == v1::FLOAT16 || dtype == v1::BFLOAT16; }

}  // namespace

v1::DType to_wire_dtype(at::ScalarType type, const std::string& field) {
  switch (type) {
    case at::kFloat:
      return v1::FLOAT32;
    case at::kLong:
      return v1::INT64;
    case at::kHalf:
      return v1::FLOAT16;
    case at::kBFloat16:
      return v1::BFLOAT16;
    default:
      throw InvalidArgument("gradwire: tensor '" + field + "' has dtype " +
                            std::string(c10::toString(type)) +
                            "; the parameter-server wire format carries float32, float16, "
                            "bfloat16 and int64 only. Convert it with .to(torch::kFloat) or "
                            ".to(torch::kLong).");
  }
}

std::string wire_dtype_name(int dtype) {
  switch (dtype) {
    case v1::FLOAT32:
      return "float32";
    case v1::INT64:
      return "int64";
    case v1::FLOAT16:
      return "float16";
    case v1::BFLOAT16:
      return "bfloat16";
    case v1::DTYPE_UNSPECIFIED:
      return "unspecified";
    default:
      return "unknown(" + std::to_string(dtype) + ")";
  }
}

void encode_tensor(const at::Tensor& tensor, v1::Tensor* out, const std::string& field) {
  GRADWIRE_CHECK(out != nullptr);
  if (!tensor.defined()) throw InvalidArgument("gradwire: tensor '" + field + "' is undefined");
  if (!tensor.device().is_cpu()) {
    throw InvalidArgument("gradwire: tensor '" + field + "' is on " + tensor.device().str() +
                          "; parameter-server calls take CPU tensors (call .cpu() first)");
  }
  out->set_dtype(to_wire_dtype(tensor.scalar_type(), field));
  out->clear_shape();
  for (const int64_t size : tensor.sizes()) out->add_shape(size);
  const at::Tensor dense = tensor.contiguous();
  const size_t bytes = static_cast<size_t>(dense.numel()) * dense.element_size();
  out->set_data(static_cast<const char*>(dense.data_ptr()), bytes);
}

at::Tensor tensor_in_message(v1::Tensor* out, at::IntArrayRef sizes, at::ScalarType type,
                             const std::string& field) {
  GRADWIRE_CHECK(out != nullptr);
  out->set_dtype(to_wire_dtype(type, field));
  out->clear_shape();
  int64_t numel = 1;
  for (const int64_t size : sizes) {
    out->add_shape(size);
    numel *= size;
  }
  std::string* bytes = out->mutable_data();
  bytes->resize(static_cast<size_t>(numel) * c10::elementSize(type));
  return at::from_blob(bytes->data(), sizes, at::TensorOptions().dtype(type));
}

void encode_shared_tensor(const at::Tensor& tensor, const v1::SharedBytes& where, v1::Tensor* out,
                          const std::string& field) {
  GRADWIRE_CHECK(out != nullptr);
  out->set_dtype(to_wire_dtype(tensor.scalar_type(), field));
  out->clear_shape();
  for (const int64_t size : tensor.sizes()) out->add_shape(size);
  out->clear_data();
  *out->mutable_shared() = where;
}

v1::Tensor encode_tensor(const at::Tensor& tensor, const std::string& field) {
  v1::Tensor message;
  encode_tensor(tensor, &message, field);
  return message;
}

at::Tensor decode_tensor(const v1::Tensor& message, const std::string& field,
                         const TensorExpectation& expect, SharedRegionCache* shared) {
  const int dtype_value = message.dtype();
  if (dtype_value != v1::FLOAT32 && dtype_value != v1::INT64 && !is_16_bit_float(dtype_value)) {
    throw_malformed(field, "dtype " + wire_dtype_name(dtype_value) +
                               " (expected float32, float16, bfloat16 or int64)");
  }
  const auto dtype = static_cast<v1::DType>(dtype_value);
  // 16-bit floats stand in for float32 (widened below).
  const bool widen = is_16_bit_float(dtype_value) && expect.dtype == at::kFloat;
  if (expect.dtype && !widen && to_scalar_type(dtype) != *expect.dtype) {
    throw InvalidArgument("gradwire: tensor '" + field + "' has dtype " +
                          wire_dtype_name(dtype_value) + ", expected " +
                          wire_dtype_name(to_wire_dtype(*expect.dtype, field)));
  }
  const int rank = message.shape_size();
  if (rank > kMaxWireRank) {
    throw_malformed(
        field, std::to_string(rank) + " dimensions (at most " + std::to_string(kMaxWireRank) + ")");
  }
  if (expect.rank >= 0 && rank != expect.rank) {
    throw InvalidArgument("gradwire: tensor '" + field + "' has shape " + shape_text(message) +
                          " (" + std::to_string(rank) + "-D), expected " +
                          std::to_string(expect.rank) + "-D");
  }
  std::vector<int64_t> sizes(message.shape().begin(), message.shape().end());
  int64_t numel = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t size = sizes[i];
    if (size < 0) {
      throw_malformed(field, "negative dimension " + std::to_string(size) + " at index " +
                                 std::to_string(i) + " of shape " + shape_text(message));
    }
    // numel * size <= max_elements without overflow.
    if (size != 0 && numel > expect.max_elements / size) {
      throw_malformed(field, "shape " + shape_text(message) + " has more than " +
                                 std::to_string(expect.max_elements) + " elements");
    }
    numel *= size;
  }
  const int64_t expected_bytes = numel * element_size(dtype);
  if (message.has_shared()) {
    if (!message.data().empty()) throw_malformed(field, "both data bytes and shared bytes");
    if (shared == nullptr) {
      throw InvalidArgument("gradwire: tensor '" + field +
                            "' refers to shared memory, which this receiver does not take "
                            "(it offered none at CreateTable)");
    }
    const at::Tensor view = shared->view(message.shared(), sizes, to_scalar_type(dtype), field);
    return widen || is_16_bit_float(dtype_value) ? view.to(at::kFloat) : view;
  }
  if (static_cast<int64_t>(message.data().size()) != expected_bytes) {
    throw_malformed(field, std::to_string(message.data().size()) + " data bytes for shape " +
                               shape_text(message) + " of " + wire_dtype_name(dtype_value) +
                               " (expected " + std::to_string(expected_bytes) + ")");
  }
  const char* bytes = message.data().data();
  if (expect.in_place && !is_16_bit_float(dtype_value) &&
      reinterpret_cast<uintptr_t>(bytes) % element_size(dtype) == 0) {
    return at::from_blob(const_cast<char*>(bytes), sizes,
                         at::TensorOptions().dtype(to_scalar_type(dtype)));
  }
  at::Tensor tensor = at::empty(sizes, at::TensorOptions().dtype(to_scalar_type(dtype)));
  if (expected_bytes > 0) std::memcpy(tensor.data_ptr(), bytes, expected_bytes);
  return widen || is_16_bit_float(dtype_value) ? tensor.to(at::kFloat) : tensor;
}

}  // namespace gradwire::rpc
