// CRC-32C by carry-less multiplication (crc32c.h), for x86-64 CPUs with AVX-512 VPCLMULQDQ.
//
// Note [folding]: read 16 bytes little-endian into a 128-bit register R; bit i of R is the
// coefficient of x^(127-i) of those bytes' message polynomial, so R = L * x^64 + H, where the
// 64-bit halves L (bits 0-63) and H (bits 64-127) are polynomials with bit i <-> x^(63-i). The
// carry-less product of two such 64-bit values a, b, read as a 128-bit register the same way,
// is x * a * b (the product's top coefficient lands in bit 0, one place past x^126).
//
// A register whose 16 bytes lie D bits before the end of the data contributes R * x^D to the
// message polynomial. Since the CRC only sees the polynomial mod P, R may be replaced by any
// 128-bit value congruent to R * x^D, which then lines up with the 16 data bytes that lie D bits
// further on and can be XORed into them ("folding" R forward by D bits):
//     R * x^D = L * x^(64 + D) + H * x^D  ==  clmul(L, x^(D + 63) mod P) ^ clmul(H, x^(D - 1) mod
//     P)
// The constants are reduced mod P (degree < 32) and placed at bits 32-63 of a 64-bit half
// (bit i <-> x^(63-i)), i.e. the register-layout value shifted left by 32.
//
// The bulk runs 4 x 512-bit accumulators (16 lanes of 16 bytes, 256 bytes a step), each lane
// folded forward 256 bytes per step, two multiplications and one three-way XOR per 64 bytes;
// then the four accumulators are folded into one, its four lanes into one 128-bit register R
// holding the whole prefix, and the CRC register of the prefix is R * x^32 mod P, which is what
// the `crc32` instruction computes over R's 16 bytes starting from 0. The remaining bytes (less
// than 64) go through the `crc32` instruction. The initial register (~crc) is XORed into the
// first 4 bytes, exactly as a bytewise CRC would absorb it.
#include <cstring>

#include "crc32c.h"
#include "crc32c_math.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gradwire::data::detail {

#if defined(__x86_64__)
namespace {

// The two 64-bit multipliers that fold a 128-bit register forward by `bits` (Note [folding]).
struct FoldConstants {
  uint64_t low_half;   // x^(bits + 63) mod P, multiplies L
  uint64_t high_half;  // x^(bits - 1) mod P, multiplies H
};

constexpr FoldConstants fold_constants(uint64_t bits) {
  return {uint64_t{crc32c_x_power_mod_p(bits + 63)} << 32,
          uint64_t{crc32c_x_power_mod_p(bits - 1)} << 32};
}

constexpr FoldConstants kFold256Bytes = fold_constants(8 * 256);
constexpr FoldConstants kFold64Bytes = fold_constants(8 * 64);
constexpr FoldConstants kFold48Bytes = fold_constants(8 * 48);
constexpr FoldConstants kFold32Bytes = fold_constants(8 * 32);
constexpr FoldConstants kFold16Bytes = fold_constants(8 * 16);

#define GRADWIRE_FOLD_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2")))

GRADWIRE_FOLD_TARGET inline __m512i broadcast(const FoldConstants& k) {
  return _mm512_broadcast_i32x4(
      _mm_set_epi64x(static_cast<long long>(k.high_half), static_cast<long long>(k.low_half)));
}

// Every lane of `x` folded forward by the distance of `k`, XORed with `data`.
GRADWIRE_FOLD_TARGET inline __m512i fold512(__m512i x, __m512i k, __m512i data) {
  const __m512i low = _mm512_clmulepi64_epi128(x, k, 0x00);
  const __m512i high = _mm512_clmulepi64_epi128(x, k, 0x11);
  return _mm512_ternarylogic_epi64(low, high, data, 0x96);  // low ^ high ^ data
}

GRADWIRE_FOLD_TARGET inline __m128i fold128(__m128i x, const FoldConstants& k, __m128i data) {
  const __m128i constants =
      _mm_set_epi64x(static_cast<long long>(k.high_half), static_cast<long long>(k.low_half));
  const __m128i low = _mm_clmulepi64_si128(x, constants, 0x00);
  const __m128i high = _mm_clmulepi64_si128(x, constants, 0x11);
  return _mm_xor_si128(_mm_xor_si128(low, high), data);
}

GRADWIRE_FOLD_TARGET inline __m512i load512(const unsigned char* p) {
  return _mm512_loadu_si512(static_cast<const void*>(p));
}

// Precondition: size >= kCrc32cFoldMinBytes. Returns the CRC (not the register).
GRADWIRE_FOLD_TARGET uint32_t extend_fold(uint32_t crc, const unsigned char* p, size_t size) {
  const __m512i initial = _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(~crc)));
  __m512i x0 = _mm512_xor_si512(load512(p), initial);
  __m512i x1 = load512(p + 64);
  __m512i x2 = load512(p + 128);
  __m512i x3 = load512(p + 192);
  p += 256;
  size -= 256;
  const __m512i k256 = broadcast(kFold256Bytes);
  while (size >= 256) {
    x0 = fold512(x0, k256, load512(p));
    x1 = fold512(x1, k256, load512(p + 64));
    x2 = fold512(x2, k256, load512(p + 128));
    x3 = fold512(x3, k256, load512(p + 192));
    p += 256;
    size -= 256;
  }
  const __m512i k64 = broadcast(kFold64Bytes);
  x1 = fold512(x0, k64, x1);
  x2 = fold512(x1, k64, x2);
  x3 = fold512(x2, k64, x3);
  while (size >= 64) {
    x3 = fold512(x3, k64, load512(p));
    p += 64;
    size -= 64;
  }
  // The four lanes of x3 hold 16 consecutive bytes each: fold the first three onto the last.
  __m128i lanes = _mm512_extracti32x4_epi32(x3, 3);
  lanes = fold128(_mm512_extracti32x4_epi32(x3, 0), kFold48Bytes, lanes);
  lanes = fold128(_mm512_extracti32x4_epi32(x3, 1), kFold32Bytes, lanes);
  lanes = fold128(_mm512_extracti32x4_epi32(x3, 2), kFold16Bytes, lanes);
  // The register after the prefix: R * x^32 mod P, i.e. `crc32` over R's bytes from 0.
  uint64_t state = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(lanes)));
  state = _mm_crc32_u64(state, static_cast<uint64_t>(_mm_extract_epi64(lanes, 1)));
  return crc32c_extend_hardware(~static_cast<uint32_t>(state), p, size);
}

}  // namespace
#endif

bool crc32c_fold_available() {
#if defined(__x86_64__)
  static const bool available = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx512vl") != 0 &&
           __builtin_cpu_supports("vpclmulqdq") != 0 && __builtin_cpu_supports("pclmul") != 0 &&
           __builtin_cpu_supports("sse4.2") != 0;
  }();
  return available;
#else
  return false;
#endif
}

uint32_t crc32c_extend_fold(uint32_t crc, const void* data, size_t size) {
#if defined(__x86_64__)
  if (size >= kCrc32cFoldMinBytes && crc32c_fold_available()) {
    return extend_fold(crc, static_cast<const unsigned char*>(data), size);
  }
#endif
  return crc32c_extend_hardware(crc, data, size);
}

}  // namespace gradwire::data::detail
