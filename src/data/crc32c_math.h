// Compile-time arithmetic on CRC-32C polynomials (crc32c.h), shared by the implementations in
// crc32c.cpp (tables) and crc32c_fold.cpp (carry-less multiplication constants).
//
// Layout: a 32-bit value is a polynomial of degree < 32 in the reflected layout of the CRC
// register: bit 31 holds the coefficient of x^0, bit 0 that of x^31. Everything is constexpr and
// pure.
#pragma once

#include <cstdint>

namespace gradwire::data::detail {

// x^32 + x^28 + ... + 1 (Castagnoli), bit-reversed, without the x^32 term.
constexpr uint32_t kCrc32cPolynomial = 0x82F63B78u;

// Feeds one zero bit into a reflected CRC register (multiplies its polynomial by x mod P).
constexpr uint32_t crc32c_times_x(uint32_t value) {
  return (value >> 1) ^ ((value & 1u) != 0 ? kCrc32cPolynomial : 0u);
}

// a * b mod P.
constexpr uint32_t crc32c_multiply_mod_p(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (int degree = 0; degree < 32; ++degree) {
    if ((a & (0x80000000u >> degree)) != 0) product ^= b;
    b = crc32c_times_x(b);
  }
  return product;
}

// x^n mod P.
constexpr uint32_t crc32c_x_power_mod_p(uint64_t n) {
  uint32_t result = 0x80000000u;  // x^0
  uint32_t square = 0x40000000u;  // x^1, then x^2, x^4, ...
  while (n != 0) {
    if ((n & 1u) != 0) result = crc32c_multiply_mod_p(result, square);
    square = crc32c_multiply_mod_p(square, square);
    n >>= 1;
  }
  return result;
}

}  // namespace gradwire::data::detail
