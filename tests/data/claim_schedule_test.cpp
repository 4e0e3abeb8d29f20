// ClaimSchedule (the dynamic partition's claims, chunk_assignment.h): every position of every
// segment goes to exactly one rank under any interleaving of the ranks' adds; ranks of equal
// speed keep to their own segments; a slow rank's tail goes to the others from the back; the last
// chunks go one at a time.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "data/chunk_assignment.h"
#include "gradwire/common/error.h"
#include "segment_coverage.h"

namespace gradwire::data {
namespace {

// Ranks claiming through one set of segment counters (a map standing in for SharedCounter).
struct Simulation {
  std::vector<uint64_t> sizes;
  std::map<uint32_t, int64_t> counters;
  std::vector<ClaimSchedule> schedules;
  // got[rank]: the ranges each rank got, in order.
  std::vector<std::vector<SegmentRange>> got;

  explicit Simulation(std::vector<uint64_t> segment_sizes) : sizes(std::move(segment_sizes)) {
    for (size_t rank = 0; rank < sizes.size(); ++rank) {
      schedules.emplace_back(sizes, static_cast<int>(rank));
      got.emplace_back();
      const SegmentRange first = schedules.back().first_range();
      if (!first.empty()) got.back().push_back(first);
    }
  }

  // One add of `rank`'s schedule; false when it has nothing left to claim.
  bool claim(size_t rank) {
    const auto claim = schedules[rank].next_claim();
    if (!claim) return false;
    const int64_t value = counters[claim->segment] += claim->delta();
    const SegmentRange range = schedules[rank].record(*claim, value);
    if (!range.empty()) got[rank].push_back(range);
    return true;
  }

  void expect_every_position_once() const { testing::expect_every_position_once(sizes, got); }
};

TEST(ClaimSchedule, EveryPositionOnceUnderRandomInterleavings) {
  const std::vector<std::vector<uint64_t>> layouts = {
      {1}, {40}, {30, 30}, {31, 0}, {0, 5}, {1, 1, 1}, {7, 50, 3}, {16, 16, 16, 16, 17}};
  for (const auto& sizes : layouts) {
    for (uint32_t seed = 0; seed < 40; ++seed) {
      Simulation simulation(sizes);
      std::mt19937 random(seed);
      std::vector<bool> done(sizes.size(), false);
      size_t left = sizes.size();
      while (left > 0) {
        const size_t rank = random() % sizes.size();
        if (done[rank]) continue;
        if (!simulation.claim(rank)) {
          done[rank] = true;
          --left;
        }
      }
      simulation.expect_every_position_once();
    }
  }
}

// Ranks reading one position per `period` ticks, claiming (in line) when they run out.
std::vector<std::vector<uint64_t>> read_at_speeds(Simulation& simulation,
                                                  const std::vector<int>& period) {
  const size_t ranks = simulation.sizes.size();
  std::vector<std::vector<uint64_t>> read_from(ranks, std::vector<uint64_t>(ranks, 0));
  std::vector<size_t> next_range(ranks, 0);
  std::vector<uint64_t> offset(ranks, 0);
  std::vector<bool> done(ranks, false);
  for (int tick = 0; tick < 100000; ++tick) {
    bool all_done = true;
    for (size_t rank = 0; rank < ranks; ++rank) {
      if (done[rank] || tick % period[rank] != 0) {
        all_done = all_done && done[rank];
        continue;
      }
      all_done = false;
      auto& ranges = simulation.got[rank];
      while (next_range[rank] < ranges.size() && offset[rank] >= ranges[next_range[rank]].size()) {
        ++next_range[rank];
        offset[rank] = 0;
      }
      if (next_range[rank] < ranges.size()) {
        ++read_from[rank][ranges[next_range[rank]].segment];
        ++offset[rank];
      } else if (!simulation.claim(rank)) {
        done[rank] = true;
      }
    }
    if (all_done) break;
  }
  return read_from;
}

TEST(ClaimSchedule, EqualSpeedsKeepToTheirOwnSegments) {
  Simulation simulation({30, 30});
  const auto read_from = read_at_speeds(simulation, {1, 1});
  simulation.expect_every_position_once();
  EXPECT_GE(read_from[0][0], 28u);
  EXPECT_GE(read_from[1][1], 28u);
  // Own claims never fall below kMinDynamicOwnClaim but for what is left; taking from another
  // segment starts with one chunk.
  for (size_t rank = 0; rank < 2; ++rank) {
    const auto& ranges = simulation.got[rank];
    for (size_t i = 0; i < ranges.size(); ++i) {
      if (ranges[i].segment != rank) {
        EXPECT_EQ(ranges[i].size(), 1u);
        break;
      }
      if (i + 1 < ranges.size() && ranges[i + 1].segment == rank) {
        EXPECT_GE(ranges[i].size(), kMinDynamicOwnClaim);
      }
    }
  }
}

TEST(ClaimSchedule, ASlowRanksTailGoesToTheOthersFromTheBack) {
  Simulation simulation({40, 40, 40});
  const auto read_from = read_at_speeds(simulation, {1, 1, 5});
  simulation.expect_every_position_once();
  uint64_t slow_total = 0;
  for (const uint64_t count : read_from[2]) slow_total += count;
  EXPECT_LT(slow_total, 30u) << "the slow rank read most of its segment";
  EXPECT_GT(read_from[0][2] + read_from[1][2], 10u);
  // What the others took from segment 2 is its end.
  uint64_t lowest_stolen = 40;
  for (size_t rank = 0; rank < 2; ++rank) {
    for (const SegmentRange& range : simulation.got[rank]) {
      if (range.segment == 2) lowest_stolen = std::min(lowest_stolen, range.begin);
    }
  }
  for (const SegmentRange& range : simulation.got[2]) EXPECT_LE(range.end, lowest_stolen);
}

TEST(ClaimSchedule, FrontAndBackClaimsGiveUpTheirOverlap) {
  // Segment 1 of 10 positions; rank 1 owns it (implicit first claim: 4), rank 0 steals.
  ClaimSchedule owner({0, 10}, 1);
  ClaimSchedule thief({0, 10}, 0);
  EXPECT_EQ(owner.first_range(), (SegmentRange{1, 0, 4}));
  EXPECT_TRUE(thief.first_range().empty());
  const SegmentClaim probe = *thief.next_claim();
  EXPECT_EQ(probe.segment, 1u);
  EXPECT_TRUE(probe.from_back);
  EXPECT_EQ(probe.size, 1u);
  EXPECT_EQ(thief.record(probe, probe.delta()), (SegmentRange{1, 9, 10}));
  SegmentClaim big = probe;
  big.size = 6;  // as if sized from a stale view: B = 7, F = 4, so [4, 9)
  int64_t value = probe.delta() + big.delta();
  EXPECT_EQ(thief.record(big, value), (SegmentRange{1, 4, 9}));
  // The owner's claim comes after: positions from 4 on are taken, it gets nothing.
  const SegmentClaim front = *owner.next_claim();
  EXPECT_FALSE(front.from_back);
  value += front.delta();
  EXPECT_TRUE(owner.record(front, value).empty());
  EXPECT_FALSE(owner.next_claim()) << "the owner knows every segment is exhausted";
}

TEST(ClaimSchedule, ASingleRankOwnsEverythingAndBadRanksAreRejected) {
  ClaimSchedule alone({25}, 0);
  EXPECT_EQ(alone.first_range(), (SegmentRange{0, 0, 25}));
  EXPECT_FALSE(alone.next_claim());
  EXPECT_THROW(ClaimSchedule({1, 2}, 2), InvalidArgument);
  EXPECT_THROW(ClaimSchedule({1, 2}, -1), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::data
