// Little-endian integers in byte strings, and the big-endian u32 of IDX files: the one home of
// byte-order code (RecordIO framing, PS checkpoints, IDX conversion). Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gradwire {

// Appends `value` to `out` as sizeof(T) little-endian bytes.
template <typename T>
void put_le(std::string& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) {
    out.push_back(static_cast<char>(static_cast<uint64_t>(value) >> (8 * i) & 0xff));
  }
}

// The sizeof(T) little-endian bytes at `at`. Precondition: bytes.size() >= at + sizeof(T).
template <typename T>
T get_le(std::string_view bytes, size_t at) {
  uint64_t value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  }
  return static_cast<T>(value);
}

// The big-endian u32 at `at` (IDX headers). Precondition: bytes.size() >= at + 4.
inline uint32_t get_be32(std::string_view bytes, size_t at) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) value = value << 8 | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

}  // namespace gradwire
