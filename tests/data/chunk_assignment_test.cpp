// assign_chunks: every chunk once, balanced by records, deterministic; what is left of an epoch
// (remaining_chunks) and its assignment; dynamic_claim_size.
#include "data/chunk_assignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "gradwire/common/error.h"

namespace gradwire::data {
namespace {

using Counts = std::vector<std::vector<uint64_t>>;

void expect_each_chunk_once(const Counts& counts,
                            const std::vector<std::vector<ChunkRef>>& shares) {
  std::map<std::pair<uint32_t, uint64_t>, int> seen;
  for (const auto& share : shares) {
    for (const ChunkRef& ref : share) {
      ++seen[{ref.file, ref.chunk}];
      EXPECT_EQ(ref.records, counts[ref.file][ref.chunk]);
    }
  }
  size_t total = 0;
  for (const auto& file : counts) total += file.size();
  EXPECT_EQ(seen.size(), total);
  for (const auto& [chunk, times] : seen) EXPECT_EQ(times, 1);
}

uint64_t spread(const std::vector<std::vector<ChunkRef>>& shares) {
  uint64_t low = UINT64_MAX, high = 0;
  for (const auto& share : shares) {
    low = std::min(low, total_records(share));
    high = std::max(high, total_records(share));
  }
  return high - low;
}

TEST(ChunkAssignment, EqualChunksSplitEvenly) {
  const Counts counts = {std::vector<uint64_t>(6, 100), std::vector<uint64_t>(6, 100)};
  const auto shares = assign_chunks(counts, 4);
  expect_each_chunk_once(counts, shares);
  for (const auto& share : shares) EXPECT_EQ(total_records(share), 300u);
}

TEST(ChunkAssignment, UnevenChunksBalancedWithinTheLargestChunk) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    Counts counts(1 + random() % 5);
    uint64_t largest = 0;
    for (auto& file : counts) {
      file.resize(random() % 20);
      for (auto& records : file) {
        records = 1 + random() % 1000;
        largest = std::max(largest, records);
      }
    }
    const int ranks = 1 + static_cast<int>(random() % 7);
    const auto shares = assign_chunks(counts, ranks);
    ASSERT_EQ(shares.size(), static_cast<size_t>(ranks));
    expect_each_chunk_once(counts, shares);
    EXPECT_LE(spread(shares), largest) << "trial " << trial;
    for (const auto& share : shares) {
      EXPECT_TRUE(
          std::is_sorted(share.begin(), share.end(), [](const ChunkRef& a, const ChunkRef& b) {
            return a.file != b.file ? a.file < b.file : a.chunk < b.chunk;
          }));
    }
  }
}

TEST(ChunkAssignment, BeatsRoundRobinOnSkewedChunks) {
  // Round robin would give rank 0 both large chunks (1000 + 1000 vs 20).
  const Counts counts = {{1000, 10, 1000, 10}};
  const auto shares = assign_chunks(counts, 2);
  EXPECT_EQ(total_records(shares[0]), 1010u);
  EXPECT_EQ(total_records(shares[1]), 1010u);
}

TEST(ChunkAssignment, MoreRanksThanChunksAndBadRanks) {
  const auto shares = assign_chunks({{5, 5}}, 3);
  expect_each_chunk_once({{5, 5}}, shares);
  EXPECT_TRUE(shares[2].empty());
  EXPECT_THROW(assign_chunks({{5}}, 0), InvalidArgument);
}

TEST(ChunkAssignment, DynamicClaimsShrinkToSingleChunksTowardsTheEnd) {
  EXPECT_EQ(dynamic_claim_size(1000, 2), kMaxDynamicClaim);  // capped
  EXPECT_EQ(dynamic_claim_size(48, 2), 12u);                 // half a fair share
  EXPECT_EQ(dynamic_claim_size(45, 2), 12u);                 // rounded up
  EXPECT_EQ(dynamic_claim_size(5, 2), 2u);
  EXPECT_EQ(dynamic_claim_size(4, 2), 1u);
  EXPECT_EQ(dynamic_claim_size(0, 2), 1u);
  EXPECT_EQ(dynamic_claim_size(100, 0), kMaxDynamicClaim);  // bad rank counts count as one
  // Walking an epoch as one rank: the claims cover every position once, end with single chunks,
  // and take far fewer round trips than positions.
  uint64_t next = 0;
  int round_trips = 0;
  uint64_t last_claim = 0;
  while (next < 256) {
    last_claim = dynamic_claim_size(256 - next, 2);
    next += last_claim;
    ++round_trips;
  }
  EXPECT_EQ(next, 256u);
  EXPECT_EQ(last_claim, 1u);
  EXPECT_LT(round_trips, 256 / 3);
}

TEST(ChunkAssignment, OwnClaimsTakeAQuarterOfTheSegment) {
  EXPECT_EQ(dynamic_own_claim_size(30, kMinDynamicOwnClaim), 8u);  // rounded up
  EXPECT_EQ(dynamic_own_claim_size(6, kMinDynamicOwnClaim), kMinDynamicOwnClaim);
  EXPECT_EQ(dynamic_own_claim_size(6, 1), 2u);
  EXPECT_EQ(dynamic_own_claim_size(30, 12), 12u);  // a measured floor wins
  EXPECT_EQ(dynamic_own_claim_size(1000, 1), kMaxDynamicClaim);
  EXPECT_EQ(dynamic_own_claim_size(0, 0), 1u);
}

TEST(ChunkAssignment, OwnClaimsCoverTwiceARoundTripOfReading) {
  EXPECT_EQ(dynamic_own_claim_floor(0, 0), kMinDynamicOwnClaim);  // nothing measured yet
  EXPECT_EQ(dynamic_own_claim_floor(200, 0), kMinDynamicOwnClaim);
  EXPECT_EQ(dynamic_own_claim_floor(50, 100), kMinDynamicOwnClaim);  // fast store
  EXPECT_EQ(dynamic_own_claim_floor(200, 40), 10u);                  // ceil(400 / 40)
  EXPECT_EQ(dynamic_own_claim_floor(5000, 40), kMaxDynamicClaim);
  EXPECT_EQ(dynamic_own_claim_floor(1e300, 1e-300), kMaxDynamicClaim);
}

TEST(ChunkAssignment, RemainingChunksStartAtTheNextRecord) {
  const Counts counts = {{10, 10, 5}, {}, {8, 0}};
  // Chunk indexes across the files: 0-2 of file 0, then 3-4 of file 2.
  const std::vector<uint64_t> consumed = {10, 3, 0, 12, 0};
  const std::vector<ChunkRef> left = remaining_chunks(counts, consumed);
  const std::vector<ChunkRef> expected = {ChunkRef{0, 1, 7, 3}, ChunkRef{0, 2, 5, 0}};
  EXPECT_EQ(left, expected);  // finished, empty and over-counted chunks leave nothing
  EXPECT_TRUE(remaining_chunks(counts, {10, 10, 5, 8, 0}).empty());
  EXPECT_THROW(remaining_chunks(counts, {1, 2}), InvalidArgument);
}

TEST(ChunkAssignment, WhatIsLeftIsSplitByTheRecordsLeft) {
  const Counts counts = {std::vector<uint64_t>(6, 100)};
  const std::vector<uint64_t> consumed = {100, 90, 0, 50, 100, 0};
  const auto shares = assign_chunk_list(remaining_chunks(counts, consumed), 2);
  ASSERT_EQ(shares.size(), 2u);
  // Left: 10 of chunk 1, 100 of chunk 2, 50 of chunk 3, 100 of chunk 5 (260 records).
  EXPECT_EQ(total_records(shares[0]) + total_records(shares[1]), 260u);
  EXPECT_LE(spread(shares), 100u);
  std::map<uint64_t, uint64_t> first_of;
  for (const auto& share : shares) {
    EXPECT_TRUE(
        std::is_sorted(share.begin(), share.end(),
                       [](const ChunkRef& a, const ChunkRef& b) { return a.chunk < b.chunk; }));
    for (const ChunkRef& ref : share) first_of[ref.chunk] = ref.first;
  }
  const std::map<uint64_t, uint64_t> expected = {{1, 90}, {2, 0}, {3, 50}, {5, 0}};
  EXPECT_EQ(first_of, expected);
  EXPECT_EQ(assign_chunk_list({}, 3), std::vector<std::vector<ChunkRef>>(3));
  EXPECT_THROW(assign_chunk_list({}, 0), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::data
