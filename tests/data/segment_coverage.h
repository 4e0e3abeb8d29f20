// Test support for the dynamic partition: checks that the ranges the ranks claimed cover every
// position of every segment exactly once.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "data/chunk_assignment.h"

namespace gradwire::data::testing {

// sizes[s]: the positions of segment s; per_rank[r]: the ranges rank r claimed. Adds a test
// failure for every position claimed twice, never, or outside its segment.
inline void expect_every_position_once(const std::vector<uint64_t>& sizes,
                                       const std::vector<std::vector<SegmentRange>>& per_rank) {
  std::map<std::pair<uint32_t, uint64_t>, int> seen;
  for (const auto& ranges : per_rank) {
    for (const SegmentRange& range : ranges) {
      for (uint64_t i = range.begin; i < range.end; ++i) ++seen[{range.segment, i}];
    }
  }
  uint64_t total = 0;
  for (const uint64_t size : sizes) total += size;
  EXPECT_EQ(seen.size(), total);
  for (const auto& [position, times] : seen) {
    EXPECT_EQ(times, 1) << "segment " << position.first << " position " << position.second;
    ASSERT_LT(position.first, sizes.size());
    EXPECT_LT(position.second, sizes[position.first]);
  }
}

}  // namespace gradwire::data::testing
