// CRC-32C, portable and SSE4.2 (crc32c.h). Note [three streams]: the `crc32` instruction has a
// latency of about 3 cycles and a throughput of one per cycle, so one dependent chain of CRCs
// runs at a third of the instruction's rate. A block of 3 * S bytes is therefore split into three
// streams of S bytes whose CRCs are computed side by side (the first starting from the running
// CRC, the other two from 0) and joined afterwards: the CRC register is linear, so continuing a
// CRC state c over S more bytes equals shift_S(c) XOR (the CRC of those bytes started from 0),
// where shift_S(c) = c * x^(8S) mod P is what S zero bytes would do to c. shift_S is linear in c,
// so it is four table look-ups, one per byte of c (tables built at compile time below).
#include "crc32c.h"

#include <array>
#include <cstring>

#include "crc32c_math.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace gradwire::data::detail {

namespace {

using ByteTable = std::array<uint32_t, 256>;

// kSlicing[k][b]: the register after byte b followed by k zero bytes, started from 0.
constexpr std::array<ByteTable, 8> make_slicing_tables() {
  std::array<ByteTable, 8> tables{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t value = byte;
    for (int bit = 0; bit < 8; ++bit) value = crc32c_times_x(value);
    tables[0][byte] = value;
  }
  for (size_t k = 1; k < 8; ++k) {
    for (size_t byte = 0; byte < 256; ++byte) {
      const uint32_t previous = tables[k - 1][byte];
      tables[k][byte] = (previous >> 8) ^ tables[0][previous & 0xffu];
    }
  }
  return tables;
}

constexpr std::array<ByteTable, 8> kSlicing = make_slicing_tables();

// shift[k][b] = (b << 8k) * x^(8 * zero_bytes) mod P: register byte k's share of the state after
// `zero_bytes` zero bytes.
using ShiftTables = std::array<ByteTable, 4>;

constexpr ShiftTables make_shift_tables(uint64_t zero_bytes) {
  const uint32_t factor = crc32c_x_power_mod_p(8 * zero_bytes);
  ShiftTables tables{};
  for (size_t k = 0; k < 4; ++k) {
    for (uint32_t byte = 0; byte < 256; ++byte) {
      tables[k][byte] = crc32c_multiply_mod_p(factor, byte << (8 * k));
    }
  }
  return tables;
}

inline uint32_t shift_by_tables(const ShiftTables& tables, uint32_t state) {
  return tables[0][state & 0xffu] ^ tables[1][(state >> 8) & 0xffu] ^
         tables[2][(state >> 16) & 0xffu] ^ tables[3][state >> 24];
}

// Little-endian 8-byte load from any address.
inline uint64_t load_le64(const unsigned char* p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | p[i];
  return value;
}

#if defined(__x86_64__)
// Stream lengths of the two block sizes (Note [three streams]): long blocks for the bulk of a
// chunk, short ones for what remains, single-stream steps for the last few hundred bytes.
constexpr size_t kLongStreamBytes = 8192;
constexpr size_t kShortStreamBytes = 256;
constexpr ShiftTables kLongShift = make_shift_tables(kLongStreamBytes);
constexpr ShiftTables kShortShift = make_shift_tables(kShortStreamBytes);

__attribute__((target("sse4.2"))) inline uint64_t load64(const unsigned char* p) {
  uint64_t value;
  std::memcpy(&value, p, sizeof(value));  // x86 is little-endian; unaligned loads are fine
  return value;
}

// Consumes whole blocks of 3 * kStreamBytes from (p, size); returns the register after them.
template <size_t kStreamBytes>
__attribute__((target("sse4.2"))) inline uint32_t three_stream_blocks(uint32_t state,
                                                                      const unsigned char*& p,
                                                                      size_t& size,
                                                                      const ShiftTables& shift) {
  while (size >= 3 * kStreamBytes) {
    uint64_t first = state;
    uint64_t second = 0;
    uint64_t third = 0;
    for (size_t i = 0; i < kStreamBytes; i += 8) {
      first = _mm_crc32_u64(first, load64(p + i));
      second = _mm_crc32_u64(second, load64(p + kStreamBytes + i));
      third = _mm_crc32_u64(third, load64(p + 2 * kStreamBytes + i));
    }
    state = shift_by_tables(shift, static_cast<uint32_t>(first)) ^ static_cast<uint32_t>(second);
    state = shift_by_tables(shift, state) ^ static_cast<uint32_t>(third);
    p += 3 * kStreamBytes;
    size -= 3 * kStreamBytes;
  }
  return state;
}

__attribute__((target("sse4.2"))) uint32_t extend_sse42(uint32_t crc, const unsigned char* p,
                                                        size_t size) {
  uint32_t state = ~crc;
  while (size > 0 && (reinterpret_cast<uintptr_t>(p) & 7u) != 0) {
    state = _mm_crc32_u8(state, *p++);
    --size;
  }
  state = three_stream_blocks<kLongStreamBytes>(state, p, size, kLongShift);
  state = three_stream_blocks<kShortStreamBytes>(state, p, size, kShortShift);
  uint64_t wide = state;
  for (; size >= 8; p += 8, size -= 8) wide = _mm_crc32_u64(wide, load64(p));
  state = static_cast<uint32_t>(wide);
  for (; size > 0; ++p, --size) state = _mm_crc32_u8(state, *p);
  return ~state;
}
#endif

}  // namespace

uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t state = ~crc;
  for (; size >= 8; p += 8, size -= 8) {
    const uint64_t word = load_le64(p) ^ state;
    state = kSlicing[7][word & 0xffu] ^ kSlicing[6][(word >> 8) & 0xffu] ^
            kSlicing[5][(word >> 16) & 0xffu] ^ kSlicing[4][(word >> 24) & 0xffu] ^
            kSlicing[3][(word >> 32) & 0xffu] ^ kSlicing[2][(word >> 40) & 0xffu] ^
            kSlicing[1][(word >> 48) & 0xffu] ^ kSlicing[0][word >> 56];
  }
  for (; size > 0; ++p, --size) state = (state >> 8) ^ kSlicing[0][(state ^ *p) & 0xffu];
  return ~state;
}

bool crc32c_hardware_available() {
#if defined(__x86_64__)
  static const bool available = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") != 0;
  }();
  return available;
#else
  return false;
#endif
}

uint32_t crc32c_extend_hardware(uint32_t crc, const void* data, size_t size) {
#if defined(__x86_64__)
  if (crc32c_hardware_available()) {
    return extend_sse42(crc, static_cast<const unsigned char*>(data), size);
  }
#endif
  return crc32c_extend_portable(crc, data, size);
}

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size) {
  return crc32c_extend_fold(crc, data, size);
}

}  // namespace gradwire::data::detail
