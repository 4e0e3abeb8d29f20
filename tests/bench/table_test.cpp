#include "harness/table.h"

#include <gtest/gtest.h>

#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

TEST(TableTest, PadsCellsToFixedWidths) {
  const Table table({{"name", 6, Align::kLeft}, {"value", 7, Align::kRight}});
  EXPECT_EQ(table.header(), "name      value");
  EXPECT_EQ(table.row({"ab", "1.5"}), "ab          1.5");
  EXPECT_EQ(table.rule(), std::string(15, '-'));
  EXPECT_THROW(table.row({"only one"}), InvalidArgument);
}

TEST(TableTest, LongCellsArePrintedWhole) {
  const Table table({{"n", 2, Align::kRight}});
  EXPECT_EQ(table.row({"12345"}), "12345");
}

TEST(FormatTest, FixedAndBytes) {
  EXPECT_EQ(format_fixed(3.14159, 2), "3.14");
  EXPECT_EQ(format_fixed(2.0, 0), "2");
  EXPECT_EQ(format_bytes(8), "8 B");
  EXPECT_EQ(format_bytes(4096), "4 KiB");
  EXPECT_EQ(format_bytes(1536 * 1024), "1.5 MiB");
  EXPECT_EQ(format_bytes(std::uint64_t{256} << 20), "256 MiB");
}

TEST(ParseBytesTest, AcceptsBinarySuffixes) {
  EXPECT_EQ(parse_bytes("4096"), 4096u);
  EXPECT_EQ(parse_bytes("64K"), 65536u);
  EXPECT_EQ(parse_bytes("256M"), std::uint64_t{256} << 20);
  EXPECT_EQ(parse_bytes("1GiB"), std::uint64_t{1} << 30);
  EXPECT_EQ(parse_bytes("8b"), 8u);
  EXPECT_THROW(parse_bytes(""), InvalidArgument);
  EXPECT_THROW(parse_bytes("M"), InvalidArgument);
  EXPECT_THROW(parse_bytes("12X"), InvalidArgument);
  EXPECT_THROW(parse_bytes("0"), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::bench
