// Little-endian integers in byte strings: the only byte-order code of the data layer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gradwire::data::detail {

template <typename T>
void put_le(std::string& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) {
    out.push_back(static_cast<char>(static_cast<uint64_t>(value) >> (8 * i) & 0xff));
  }
}

// Precondition: bytes.size() >= at + sizeof(T).
template <typename T>
T get_le(std::string_view bytes, size_t at) {
  uint64_t value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  }
  return static_cast<T>(value);
}

// Big-endian u32, for IDX files.
inline uint32_t get_be32(std::string_view bytes, size_t at) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) {
    value = value << 8 | static_cast<unsigned char>(bytes[at + i]);
  }
  return value;
}

}  // namespace gradwire::data::detail
