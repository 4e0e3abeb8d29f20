#include "harness/bandwidth.h"

#include <gtest/gtest.h>

#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

TEST(BusBandwidthTest, FactorsMatchNcclTests) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllGather, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllToAll, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kReduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kSendRecv, 2), 1.0);
}

TEST(BusBandwidthTest, OneRankMovesNothingOverTheBus) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllReduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllGather, 1), 0.0);
  EXPECT_THROW(bus_bandwidth_factor(Collective::kAllReduce, 0), InvalidArgument);
}

TEST(BandwidthTest, GigabytesPerSecondUsesDecimalGigabytes) {
  EXPECT_DOUBLE_EQ(gigabytes_per_second(2e9, 1.0), 2.0);
  EXPECT_DOUBLE_EQ(gigabytes_per_second(1e6, 1e-3), 1.0);
  EXPECT_DOUBLE_EQ(gigabytes_per_second(1e6, 0.0), 0.0);
}

TEST(DoublingSizesTest, DoublesUpToMax) {
  EXPECT_EQ(doubling_sizes(8, 64), (std::vector<std::uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(doubling_sizes(8, 100), (std::vector<std::uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(doubling_sizes(4096, 4096), (std::vector<std::uint64_t>{4096}));
  EXPECT_EQ(doubling_sizes(8, std::uint64_t{256} << 20).size(), 26u);  // 2^3 .. 2^28
  EXPECT_THROW(doubling_sizes(0, 8), InvalidArgument);
  EXPECT_THROW(doubling_sizes(16, 8), InvalidArgument);
}

TEST(MemcpyBandwidthTest, MeasuresAPositiveRate) {
  MemcpyOptions options;
  options.bytes = 1 << 20;
  options.repetitions = 2;
  EXPECT_GT(measure_memcpy_bandwidth(options), 0.0);
  options.repetitions = 0;
  EXPECT_THROW(measure_memcpy_bandwidth(options), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::bench
