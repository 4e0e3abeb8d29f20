// CRC-32C: the standard check value and published vectors (RFC 3720, appendix B.4) for every
// implementation, and the SSE4.2 and folding ones equal to the portable one on random lengths,
// starts, initial values and split points (which exercises the three-stream blocks and their
// joining tables, and every folding step: 256-byte blocks, 64-byte blocks, the lane reduction
// and the tail).
#include "data/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "data/recordio_format.h"

namespace gradwire::data::detail {
namespace {

using Crc = uint32_t (*)(uint32_t, const void*, size_t);

uint32_t crc_of(Crc crc, const std::string& bytes) { return crc(0, bytes.data(), bytes.size()); }

std::string bytes_from(std::initializer_list<int> values, size_t repeat = 1) {
  std::string out;
  for (size_t i = 0; i < repeat; ++i) {
    for (int value : values) out.push_back(static_cast<char>(value));
  }
  return out;
}

TEST(Crc32c, CheckValueAndKnownVectors) {
  std::string ascending;
  std::string descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  for (Crc crc :
       {&crc32c_extend_portable, &crc32c_extend_hardware, &crc32c_extend_fold, &crc32c_extend}) {
    EXPECT_EQ(crc_of(crc, "123456789"), 0xE3069283u);
    EXPECT_EQ(crc_of(crc, ""), 0u);
    EXPECT_EQ(crc(0, nullptr, 0), 0u);
    EXPECT_EQ(crc_of(crc, "a"), 0xC1D04330u);
    EXPECT_EQ(crc_of(crc, std::string(32, '\0')), 0x8A9136AAu);
    EXPECT_EQ(crc_of(crc, bytes_from({0xff}, 32)), 0x62A8AB43u);
    EXPECT_EQ(crc_of(crc, ascending), 0x46DD794Eu);
    EXPECT_EQ(crc_of(crc, descending), 0x113FDB5Cu);
  }
  EXPECT_EQ(crc32_of("123456789"), 0xE3069283u);
}

TEST(Crc32c, ExtendingEqualsOneCall) {
  const std::string text = "The quick brown fox jumps over the lazy dog";
  for (Crc crc : {&crc32c_extend_portable, &crc32c_extend_hardware, &crc32c_extend_fold}) {
    for (size_t split = 0; split <= text.size(); ++split) {
      const uint32_t first = crc(0, text.data(), split);
      EXPECT_EQ(crc(first, text.data() + split, text.size() - split), crc_of(crc, text)) << split;
    }
  }
}

TEST(Crc32c, HardwareEqualsPortableOnRandomLengthsAndMisalignedStarts) {
  std::mt19937_64 random(20261123);
  std::vector<unsigned char> data(100000 + 64);
  for (auto& byte : data) byte = static_cast<unsigned char>(random());
  // Lengths around the block sizes (3 x 8192 and 3 x 256 bytes) and random ones up to 100k.
  std::vector<size_t> lengths = {0,    1,     7,     8,     9,     767,   768,   769,   1535,
                                 1536, 24575, 24576, 24577, 49152, 49153, 73727, 100000};
  std::uniform_int_distribution<size_t> any_length(0, 100000);
  for (int i = 0; i < 200; ++i) lengths.push_back(any_length(random));
  for (size_t length : lengths) {
    const size_t start = random() % 64;
    const unsigned char* p = data.data() + start;
    const uint32_t portable = crc32c_extend_portable(0, p, length);
    EXPECT_EQ(crc32c_extend_hardware(0, p, length), portable) << length << " from " << start;
    EXPECT_EQ(crc32c_extend_fold(0, p, length), portable) << length << " from " << start;
    EXPECT_EQ(crc32c_extend(0, p, length), portable) << length << " from " << start;
    const size_t split = length == 0 ? 0 : random() % length;
    EXPECT_EQ(
        crc32c_extend_hardware(crc32c_extend_hardware(0, p, split), p + split, length - split),
        portable)
        << length << " split at " << split;
    EXPECT_EQ(crc32c_extend_fold(crc32c_extend_fold(0, p, split), p + split, length - split),
              portable)
        << length << " split at " << split;
  }
}

TEST(Crc32c, FoldingEqualsPortableAroundItsBlockSizes) {
  if (!crc32c_fold_available()) GTEST_SKIP() << "this CPU has no AVX-512 VPCLMULQDQ";
  std::mt19937_64 random(20261124);
  std::vector<unsigned char> data(8192 + 64);
  for (auto& byte : data) byte = static_cast<unsigned char>(random());
  // Every length from just under the folding minimum to past two 256-byte steps, then longer
  // ones: each count of 256-byte steps, 64-byte blocks and tail bytes.
  std::vector<size_t> lengths;
  for (size_t length = kCrc32cFoldMinBytes - 8; length <= 1100; ++length) lengths.push_back(length);
  for (size_t length : {2047, 2048, 2049, 4095, 4096, 4160, 8191, 8192}) lengths.push_back(length);
  for (size_t length : lengths) {
    const size_t start = random() % 64;
    const unsigned char* p = data.data() + start;
    const auto initial = static_cast<uint32_t>(random());
    EXPECT_EQ(crc32c_extend_fold(initial, p, length), crc32c_extend_portable(initial, p, length))
        << length << " from " << start << " after " << initial;
  }
  // All zero and all one bytes (the initial register is the only non-zero input).
  const std::string zeros(4096, '\0');
  const std::string ones(4096, '\xff');
  EXPECT_EQ(crc_of(&crc32c_extend_fold, zeros), crc_of(&crc32c_extend_portable, zeros));
  EXPECT_EQ(crc_of(&crc32c_extend_fold, ones), crc_of(&crc32c_extend_portable, ones));
}

TEST(Crc32c, ReportsWhetherTheCpuHasTheInstruction) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  EXPECT_EQ(crc32c_hardware_available(), __builtin_cpu_supports("sse4.2") != 0);
  EXPECT_EQ(crc32c_fold_available(),
            __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx512vl") != 0 &&
                __builtin_cpu_supports("vpclmulqdq") != 0 &&
                __builtin_cpu_supports("pclmul") != 0 && __builtin_cpu_supports("sse4.2") != 0);
#else
  EXPECT_FALSE(crc32c_hardware_available());
  EXPECT_FALSE(crc32c_fold_available());
#endif
}

}  // namespace
}  // namespace gradwire::data::detail
