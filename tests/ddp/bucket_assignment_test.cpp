// assign_buckets: caps, closing rule, groups, bucket order and rebuild orders.
#include "ddp/bucket_assignment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

namespace gradwire::ddp {
namespace {

using Buckets = std::vector<std::vector<size_t>>;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const std::string kFloat = "Float/cpu";
const std::string kDouble = "Double/cpu";

std::vector<ParamShape> same_size(size_t count, size_t bytes, const std::string& group = kFloat) {
  return std::vector<ParamShape>(count, ParamShape{bytes, group});
}

std::vector<size_t> reversed(size_t count) {
  std::vector<size_t> order(count);
  std::iota(order.rbegin(), order.rend(), size_t{0});
  return order;
}

TEST(AssignBuckets, FirstCapThenLaterCaps) {
  auto buckets = assign_buckets(same_size(10, 100), reversed(10), {100, 300});
  EXPECT_THAT(buckets, ElementsAre(ElementsAre(9), ElementsAre(8, 7, 6), ElementsAre(5, 4, 3),
                                   ElementsAre(2, 1, 0)));
}

TEST(AssignBuckets, LastCapRepeats) {
  auto buckets = assign_buckets(same_size(7, 100), reversed(7), {200, 300, 100});
  EXPECT_THAT(buckets,
              ElementsAre(ElementsAre(6, 5), ElementsAre(4, 3, 2), ElementsAre(1), ElementsAre(0)));
}

TEST(AssignBuckets, BucketClosesWhenReachingItsCap) {
  // 60 + 60 = 120 >= 100: the second parameter closes the bucket, exceeding the cap.
  EXPECT_THAT(assign_buckets(same_size(5, 60), reversed(5), {100}),
              ElementsAre(ElementsAre(4, 3), ElementsAre(2, 1), ElementsAre(0)));
  // Exactly the cap closes too.
  EXPECT_THAT(assign_buckets(same_size(4, 50), reversed(4), {100}),
              ElementsAre(ElementsAre(3, 2), ElementsAre(1, 0)));
  // Below the cap: one unfinished bucket, kept.
  EXPECT_THAT(assign_buckets(same_size(3, 10), reversed(3), {100}),
              ElementsAre(ElementsAre(2, 1, 0)));
}

TEST(AssignBuckets, ParameterLargerThanCapGetsItsOwnBucket) {
  // order 0, 1, 2, 3: [0, 1] reaches 100 and closes; 2 alone exceeds the cap; 3 starts anew.
  std::vector<ParamShape> params = {{50, kFloat}, {50, kFloat}, {500, kFloat}, {10, kFloat}};
  EXPECT_THAT(assign_buckets(params, {0, 1, 2, 3}, {100}),
              ElementsAre(ElementsAre(0, 1), ElementsAre(2), ElementsAre(3)));
  // First in order: its own first bucket.
  EXPECT_THAT(assign_buckets(params, {2, 0, 1, 3}, {100}),
              ElementsAre(ElementsAre(2), ElementsAre(0, 1), ElementsAre(3)));
}

TEST(AssignBuckets, GroupsNeverMix) {
  std::vector<ParamShape> params;
  for (int i = 0; i < 8; ++i) params.push_back({10, i % 2 == 0 ? kFloat : kDouble});
  auto buckets = assign_buckets(params, reversed(8), {1000});
  // 7 (Double) comes first in the order, so the Double bucket is first.
  EXPECT_THAT(buckets, ElementsAre(ElementsAre(7, 5, 3, 1), ElementsAre(6, 4, 2, 0)));
}

TEST(AssignBuckets, CapsCountPerGroupAndBucketsFollowFirstMember) {
  // 0:F 1:D 2:F 3:F 4:D 5:F, all 100 bytes, order 5..0, caps {100, 200}.
  // Float in order: 5 | 3 2 | 0 (first Float bucket uses cap 100, then 200).
  // Double in order: 4 | 1 (its own first bucket uses cap 100).
  // Ordered by the position of the first member: [5]@0, [4]@1, [3,2]@2, [1]@4, [0]@5.
  std::vector<ParamShape> params = {{100, kFloat}, {100, kDouble}, {100, kFloat},
                                    {100, kFloat}, {100, kDouble}, {100, kFloat}};
  EXPECT_THAT(assign_buckets(params, reversed(6), {100, 200}),
              ElementsAre(ElementsAre(5), ElementsAre(4), ElementsAre(3, 2), ElementsAre(1),
                          ElementsAre(0)));
}

TEST(AssignBuckets, RebuildOrderIsRespected) {
  // An observed order, not the reverse of registration.
  EXPECT_THAT(assign_buckets(same_size(6, 100), {2, 0, 1, 5, 3, 4}, {200}),
              ElementsAre(ElementsAre(2, 0), ElementsAre(1, 5), ElementsAre(3, 4)));
  EXPECT_THAT(assign_buckets(same_size(4, 100), {0, 1, 2, 3}, {100, 1000}),
              ElementsAre(ElementsAre(0), ElementsAre(1, 2, 3)));
}

TEST(AssignBuckets, EmptyInput) { EXPECT_THAT(assign_buckets({}, {}, {100}), IsEmpty()); }

// Randomised: every index once, one group per bucket, members in `order` order, buckets
// ordered by their first member, and every closed bucket of a group reached its cap.
TEST(AssignBuckets, InvariantsOnRandomInputs) {
  std::mt19937 rng(42);
  const std::vector<std::string> groups = {kFloat, kDouble, "Half/cpu"};
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = 1 + rng() % 40;
    std::vector<ParamShape> params;
    for (size_t i = 0; i < n; ++i) params.push_back({1 + rng() % 400, groups[rng() % 3]});
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::shuffle(order.begin(), order.end(), rng);
    const std::vector<size_t> caps = {1 + rng() % 300, 1 + rng() % 900};
    std::vector<size_t> position(n);
    for (size_t i = 0; i < n; ++i) position[order[i]] = i;

    auto buckets = assign_buckets(params, order, caps);
    SCOPED_TRACE("trial " + std::to_string(trial));
    std::multiset<size_t> seen;
    // Per group, in bucket order: each bucket's bytes and the bytes of its last member.
    std::map<std::string, std::vector<std::pair<size_t, size_t>>> bytes_by_group;
    size_t previous_first = 0;
    for (size_t b = 0; b < buckets.size(); ++b) {
      const auto& bucket = buckets[b];
      ASSERT_FALSE(bucket.empty());
      if (b > 0) EXPECT_GT(position[bucket[0]], previous_first);
      previous_first = position[bucket[0]];
      size_t bytes = 0;
      for (size_t i = 0; i < bucket.size(); ++i) {
        ASSERT_LT(bucket[i], n);
        seen.insert(bucket[i]);
        EXPECT_EQ(params[bucket[i]].group, params[bucket[0]].group);
        if (i > 0) EXPECT_GT(position[bucket[i]], position[bucket[i - 1]]);
        bytes += params[bucket[i]].bytes;
      }
      bytes_by_group[params[bucket[0]].group].emplace_back(bytes, params[bucket.back()].bytes);
    }
    EXPECT_EQ(seen.size(), n);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(seen.count(i), 1u) << "index " << i;
    for (const auto& [group, sizes] : bytes_by_group) {
      for (size_t k = 0; k < sizes.size(); ++k) {
        const size_t cap = caps[std::min(k, caps.size() - 1)];
        const auto [bytes, last] = sizes[k];
        // Closed as soon as it reached its cap: below it without its last member...
        EXPECT_LT(bytes - last, cap) << group << " bucket " << k;
        // ...and every bucket but the group's last one did reach it.
        if (k + 1 < sizes.size()) EXPECT_GE(bytes, cap) << group << " bucket " << k;
      }
    }
  }
}

}  // namespace
}  // namespace gradwire::ddp
