// Communication overlaps backward: with several buckets, the first bucket's reduction is
// launched while gradients of later layers are still being computed. Checked on the recorded
// events of the last synchronised iteration (order, not timing).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <map>

#include "gradwire/ddp/ddp.h"
#include "reference_training.h"
#include "test_models.h"

namespace gradwire::ddp::testing {
namespace {

constexpr int kWorld = 2;
constexpr int kIterations = 3;

struct RankEvents {
  std::vector<DdpEvent> events;
  size_t buckets = 0;
  size_t parameters = 0;
};

std::vector<RankEvents> record_last_iteration(
    ReductionSchedule schedule = ReductionSchedule::kOverlapped) {
  torch::set_num_threads(1);
  auto batches = make_batches(kIterations, 4 * kWorld, {16}, 4, 37);
  auto replicas = make_replicas(kWorld, [] {
    return Mlp(std::vector<int64_t>{16, 16, 16, 16, 16, 16, 4});
  });
  DdpOptions options;
  options.bucket_cap_mb = 0.001;
  options.first_bucket_mb = 0.001;
  options.record_events = true;
  options.schedule = schedule;
  std::vector<RankEvents> out(kWorld);
  gradwire::testing::run_ranks(
      kWorld,
      [&](int rank, World& w) {
        auto& model = replicas[rank];
        DistributedDataParallel<MlpImpl> ddp(model, w.communicator(), options);
        auto optimizer = make_sgd(*model);
        for (const auto& batch : batches) {
          optimizer.zero_grad();
          auto output = ddp(rank_chunk(batch.input, rank, kWorld));
          torch::mse_loss(output, rank_chunk(batch.target, rank, kWorld)).backward();
          optimizer.step();
        }
        out[rank].events = ddp.last_iteration_events();
        out[rank].buckets = ddp.stats().buckets.size();
        out[rank].parameters = model->parameters().size();
      },
      std::chrono::seconds(20));
  return out;
}

std::string describe(const std::vector<DdpEvent>& events) {
  std::string out;
  for (const auto& e : events)
    out += std::string(to_string(e.kind)) + " " + std::to_string(e.index) + "\n";
  return out;
}

std::vector<size_t> positions_of(const std::vector<DdpEvent>& events, DdpEventKind kind) {
  std::vector<size_t> out;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind == kind) out.push_back(i);
  }
  return out;
}

TEST(DdpOverlap, FirstBucketLaunchedBeforeLastGradientReady) {
  auto ranks = record_last_iteration();
  for (int r = 0; r < kWorld; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& events = ranks[r].events;
    ASSERT_GE(ranks[r].buckets, 3u);
    auto launched = positions_of(events, DdpEventKind::kBucketLaunched);
    auto ready = positions_of(events, DdpEventKind::kGradReady);
    ASSERT_FALSE(launched.empty()) << describe(events);
    ASSERT_FALSE(ready.empty()) << describe(events);
    EXPECT_LT(launched.front(), ready.back()) << describe(events);
    EXPECT_LE(events[launched.front()].time, events[ready.back()].time);
  }
}

TEST(DdpOverlap, EveryBucketLaunchedAndReducedOnceInOrder) {
  auto ranks = record_last_iteration();
  for (int r = 0; r < kWorld; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& events = ranks[r].events;
    const size_t buckets = ranks[r].buckets;
    ASSERT_GE(buckets, 3u);
    std::map<size_t, size_t> launched_at;  // bucket -> position
    std::map<size_t, size_t> reduced_at;
    std::vector<size_t> launch_order;
    std::map<size_t, int> ready_count;  // parameter -> count
    size_t backward_ends = 0;
    size_t backward_end_at = 0;
    for (size_t i = 0; i < events.size(); ++i) {
      const auto& e = events[i];
      switch (e.kind) {
        case DdpEventKind::kBucketLaunched:
          EXPECT_TRUE(launched_at.emplace(e.index, i).second) << "bucket " << e.index << " twice";
          launch_order.push_back(e.index);
          break;
        case DdpEventKind::kBucketReduced:
          EXPECT_TRUE(reduced_at.emplace(e.index, i).second) << "bucket " << e.index << " twice";
          break;
        case DdpEventKind::kGradReady:
          ++ready_count[e.index];
          break;
        case DdpEventKind::kBackwardEnd:
          ++backward_ends;
          backward_end_at = i;
          break;
      }
    }
    EXPECT_EQ(launched_at.size(), buckets) << describe(events);
    EXPECT_EQ(reduced_at.size(), buckets) << describe(events);
    std::vector<size_t> expected_order(buckets);
    for (size_t b = 0; b < buckets; ++b) expected_order[b] = b;
    EXPECT_EQ(launch_order, expected_order) << describe(events);
    for (const auto& [bucket, position] : reduced_at) {
      ASSERT_EQ(launched_at.count(bucket), 1u) << "bucket " << bucket;
      EXPECT_LT(launched_at[bucket], position) << "bucket " << bucket;
    }
    EXPECT_EQ(backward_ends, 1u) << describe(events);
    // Every parameter became ready once, before backward ended.
    EXPECT_EQ(ready_count.size(), ranks[r].parameters) << describe(events);
    for (const auto& [param, count] : ready_count) {
      EXPECT_LT(param, ranks[r].parameters);
      EXPECT_EQ(count, 1) << "parameter " << param;
    }
    auto ready = positions_of(events, DdpEventKind::kGradReady);
    if (!ready.empty() && backward_ends == 1) EXPECT_LT(ready.back(), backward_end_at);
  }
}

// kAfterBackward: nothing is launched before backward ends; then every bucket is launched, in
// order, before the first one is waited for.
TEST(DdpOverlap, AfterBackwardLaunchesEverythingWhenBackwardEnds) {
  auto ranks = record_last_iteration(ReductionSchedule::kAfterBackward);
  for (int r = 0; r < kWorld; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& events = ranks[r].events;
    ASSERT_GE(ranks[r].buckets, 3u);
    auto end = positions_of(events, DdpEventKind::kBackwardEnd);
    auto launched = positions_of(events, DdpEventKind::kBucketLaunched);
    auto reduced = positions_of(events, DdpEventKind::kBucketReduced);
    ASSERT_EQ(end.size(), 1u) << describe(events);
    ASSERT_EQ(launched.size(), ranks[r].buckets) << describe(events);
    ASSERT_EQ(reduced.size(), ranks[r].buckets) << describe(events);
    EXPECT_GT(launched.front(), end.front()) << describe(events);
    EXPECT_LT(launched.back(), reduced.front()) << describe(events);
  }
}

// kAfterBackwardSync: after backward, launch and reduction alternate bucket by bucket.
TEST(DdpOverlap, AfterBackwardSyncReducesOneBucketAtATime) {
  auto ranks = record_last_iteration(ReductionSchedule::kAfterBackwardSync);
  for (int r = 0; r < kWorld; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& events = ranks[r].events;
    ASSERT_GE(ranks[r].buckets, 3u);
    auto end = positions_of(events, DdpEventKind::kBackwardEnd);
    ASSERT_EQ(end.size(), 1u) << describe(events);
    std::vector<std::pair<DdpEventKind, size_t>> after;
    for (size_t i = end.front() + 1; i < events.size(); ++i) {
      after.emplace_back(events[i].kind, events[i].index);
    }
    std::vector<std::pair<DdpEventKind, size_t>> expected;
    for (size_t b = 0; b < ranks[r].buckets; ++b) {
      expected.emplace_back(DdpEventKind::kBucketLaunched, b);
      expected.emplace_back(DdpEventKind::kBucketReduced, b);
    }
    EXPECT_EQ(after, expected) << describe(events);
  }
}

TEST(DdpOverlap, ScheduleNames) {
  EXPECT_STREQ(to_string(ReductionSchedule::kOverlapped), "overlapped");
  EXPECT_STREQ(to_string(ReductionSchedule::kAfterBackward), "async");
  EXPECT_STREQ(to_string(ReductionSchedule::kAfterBackwardSync), "sync");
}

}  // namespace
}  // namespace gradwire::ddp::testing
