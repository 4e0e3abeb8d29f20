// ChunkClaimer (src/data/chunk_claimer.h): the claim made ahead is never lost or read twice, across
// ranks and epochs, also when an epoch is abandoned; counter errors reach next(); destruction with
// a round trip in flight returns.
#include "data/chunk_claimer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <thread>

#include "segment_coverage.h"

namespace gradwire::data::detail {
namespace {

using namespace std::chrono_literals;

// A local counter whose adds take a random few hundred microseconds, like a store round trip.
class SlowCounter : public SharedCounter {
 public:
  int64_t add(const std::string& key, int64_t delta) override {
    std::this_thread::sleep_for(std::chrono::microseconds(100 + next_delay() % 400));
    return inner_->add(key, delta);
  }

 private:
  unsigned next_delay() {
    std::lock_guard<std::mutex> lock(mutex_);
    return random_();
  }
  std::shared_ptr<SharedCounter> inner_ = make_local_counter();
  std::mutex mutex_;
  std::mt19937 random_{7};
};

class FailingCounter : public SharedCounter {
 public:
  int64_t add(const std::string& key, int64_t) override {
    throw BackendError("gradwire: test counter refuses '" + key + "'");
  }
};

// Reads one epoch with `claimer` (a rank's), sleeping `per_position` per position read.
std::vector<SegmentRange> drain(ChunkClaimer& claimer, std::chrono::microseconds per_position) {
  std::vector<SegmentRange> ranges;
  while (auto range = claimer.next()) {
    ranges.push_back(*range);
    std::this_thread::sleep_for(per_position * range->size());
  }
  return ranges;
}

TEST(ChunkClaimer, ClaimsAheadAreNeverLostOrReadTwiceWithASlowRank) {
  auto counter = std::make_shared<SlowCounter>();
  const std::vector<uint64_t> sizes = {40, 37, 45};
  std::vector<std::unique_ptr<ChunkClaimer>> claimers;
  for (int rank = 0; rank < 3; ++rank)
    claimers.push_back(std::make_unique<ChunkClaimer>(counter, rank));
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<std::vector<SegmentRange>> per_rank(3);
    std::vector<std::thread> ranks;
    for (int rank = 0; rank < 3; ++rank) {
      claimers[rank]->start_epoch("q/epoch/" + std::to_string(epoch), sizes);
      ranks.emplace_back(
          [&, rank] { per_rank[rank] = drain(*claimers[rank], rank == 2 ? 500us : 20us); });
    }
    for (auto& thread : ranks) thread.join();
    testing::expect_every_position_once(sizes, per_rank);
    EXPECT_FALSE(claimers[0]->next()) << "stays exhausted";
  }
}

TEST(ChunkClaimer, AnAbandonedEpochsClaimDoesNotLeakIntoTheNext) {
  auto counter = std::make_shared<SlowCounter>();
  const std::vector<uint64_t> sizes = {30, 30};
  ChunkClaimer rank0(counter, 0);
  ChunkClaimer rank1(counter, 1);
  // Rank 0 abandons epoch 0 with a claim in flight (cancel, then a new epoch at once).
  rank0.start_epoch("q/epoch/0", sizes);
  ASSERT_TRUE(rank0.next());
  ASSERT_TRUE(rank0.next());
  rank0.cancel();
  EXPECT_FALSE(rank0.next()) << "cancelled";
  rank0.start_epoch("q/epoch/1", sizes);
  rank1.start_epoch("q/epoch/1", sizes);
  std::vector<std::vector<SegmentRange>> per_rank(2);
  std::thread other([&] { per_rank[1] = drain(rank1, 10us); });
  per_rank[0] = drain(rank0, 10us);
  other.join();
  testing::expect_every_position_once(sizes, per_rank);
}

TEST(ChunkClaimer, CounterErrorsAreThrownByNext) {
  ChunkClaimer claimer(std::make_shared<FailingCounter>(), 1);
  claimer.start_epoch("q/epoch/0", {20, 20});
  const auto first = claimer.next();  // the implicit range needs no counter
  ASSERT_TRUE(first);
  EXPECT_EQ(first->segment, 1u);
  EXPECT_THROW(claimer.next(), BackendError);
  EXPECT_THROW(claimer.next(), BackendError) << "again";
}

TEST(ChunkClaimer, DestructionWithARoundTripInFlightReturns) {
  auto counter = std::make_shared<SlowCounter>();
  for (int i = 0; i < 20; ++i) {
    ChunkClaimer claimer(counter, 0);
    claimer.start_epoch("q/epoch/" + std::to_string(i), {50, 50});
    ASSERT_TRUE(claimer.next());
  }  // each destroyed while its first claim is (likely) in flight
}

}  // namespace
}  // namespace gradwire::data::detail
