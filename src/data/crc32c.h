// CRC-32C (Castagnoli; reflected polynomial 0x82F63B78, check value 0xE3069283 for "123456789"),
// the RecordIO checksum (docs/formats/recordio.md). Three implementations with identical results:
//   - fold: carry-less multiplication (AVX-512 VPCLMULQDQ) folding 16 lanes of 16 bytes at a
//     time, for buffers of kCrc32cFoldMinBytes and more (crc32c_fold.cpp, Note [folding]);
//   - hardware: the SSE4.2 `crc32` instruction on x86-64, three independent streams over the same
//     block interleaved so the instruction's 3-cycle latency is hidden, the three partial CRCs
//     joined with precomputed "shift by N zero bytes" tables;
//   - portable: table-driven, 8 bytes per step (slicing by 8), on every CPU.
// crc32c_extend() picks the fastest one the CPU has (checked at run time), so the library runs on
// x86-64 CPUs without AVX-512 or SSE4.2 and compiles on other architectures.
//
// All functions are pure and thread safe; the tables are compile-time constants.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gradwire::data::detail {

// The CRC-32C of the bytes covered so far followed by `data[0, size)`; `crc` is 0 for an empty
// prefix (so crc32c_extend(crc32c_extend(0, a), b) is the CRC-32C of a then b). `data` may be
// null when size is 0; no alignment needed.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size);

// The table-driven implementation (any CPU).
uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t size);

// True when this CPU can run crc32c_extend_hardware (x86-64 with SSE4.2).
bool crc32c_hardware_available();

// The SSE4.2 implementation. Precondition: crc32c_hardware_available(); without it this
// falls back to the portable one (always, on non-x86 builds).
uint32_t crc32c_extend_hardware(uint32_t crc, const void* data, size_t size);

// Buffers shorter than this go to crc32c_extend_hardware even when folding is available.
constexpr size_t kCrc32cFoldMinBytes = 256;

// True when this CPU can run the folding implementation (x86-64 with AVX-512F, AVX-512VL,
// VPCLMULQDQ, PCLMULQDQ and SSE4.2).
bool crc32c_fold_available();

// The folding implementation for `size >= kCrc32cFoldMinBytes` on a CPU that has it; otherwise
// crc32c_extend_hardware.
uint32_t crc32c_extend_fold(uint32_t crc, const void* data, size_t size);

}  // namespace gradwire::data::detail
