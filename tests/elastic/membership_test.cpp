// The elastic rendezvous: the closing rule (pure) and generations through an in-process store,
// workers as threads.
#include "elastic/membership.h"

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <thread>

#include "gradwire/common/error.h"

namespace gradwire::elastic::detail {
namespace {

JoinView view(std::vector<std::string> arrivals, std::vector<std::string> previous,
              std::string me) {
  JoinView v;
  v.arrivals = std::move(arrivals);
  v.previous = std::move(previous);
  v.me = std::move(me);
  v.min_workers = 2;
  v.max_workers = 4;
  v.initial_workers = 3;
  return v;
}

TEST(ElasticDecide, TheFirstGenerationWaitsForTheInitialWorkers) {
  EXPECT_EQ(decide(view({"0.0.0", "0.1.0"}, {}, "0.0.0")), JoinDecision::kWait);
  EXPECT_EQ(decide(view({"0.0.0", "0.1.0", "0.2.0"}, {}, "0.0.0")), JoinDecision::kClose);
  auto late = view({"0.0.0", "0.1.0"}, {}, "0.0.0");
  late.timed_out = true;
  EXPECT_EQ(decide(late), JoinDecision::kClose);  // at least min_workers after the timeout
  late.arrivals = {"0.0.0"};
  EXPECT_EQ(decide(late), JoinDecision::kFail);
}

TEST(ElasticDecide, SurvivorsCloseOnceEveryPreviousMemberArrivedOrIsGone) {
  auto v = view({"0.0.0", "0.2.0"}, {"0.0.0", "0.1.0", "0.2.0"}, "0.0.0");
  EXPECT_EQ(decide(v), JoinDecision::kWait);
  EXPECT_EQ(missing(v), std::vector<std::string>{"0.1.0"});
  v.gone = {"0.1.0"};
  EXPECT_EQ(decide(v), JoinDecision::kClose);
  v.arrivals = {"0.0.0"};  // accounted for, but below the minimum: wait, then fail
  EXPECT_EQ(decide(v), JoinDecision::kWait);
  v.timed_out = true;
  EXPECT_EQ(decide(v), JoinDecision::kFail);
}

TEST(ElasticDecide, ANewcomerNeverClosesBesideLiveMembers) {
  auto v = view({"0.1.1", "0.3.0"}, {"0.0.0", "0.2.0"}, "0.1.1");
  v.timed_out = true;
  EXPECT_EQ(decide(v), JoinDecision::kFail);  // the members did not reach a commit in time
  v.gone = {"0.0.0", "0.2.0"};                // ...unless they are all gone
  EXPECT_EQ(decide(v), JoinDecision::kClose);
  auto full = view({"0.1.1", "0.3.0", "0.4.0", "0.5.0"}, {"0.0.0"}, "0.1.1");
  EXPECT_EQ(decide(full), JoinDecision::kClose);  // max_workers arrived
}

TEST(ElasticDecide, NodeOfAWorkerId) {
  EXPECT_EQ(node_of("3.1.2"), "3");
  EXPECT_EQ(node_of("host-12.0.0"), "host-12");
}

bool wait_until_true(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

MembershipOptions options_for(const std::string& id, std::chrono::milliseconds timeout) {
  MembershipOptions options;
  options.worker_id = id;
  options.host = "h";
  options.min_workers = 1;
  options.initial_workers = 3;
  options.timeout = timeout;
  options.verbose = false;
  return options;
}

TEST(ElasticMembership, GenerationsFormThroughTheStore) {
  auto store = JobStore::in_process(std::chrono::seconds(10));
  const std::vector<std::string> ids = {"0.0.0", "0.1.0", "0.2.0"};
  std::vector<std::future<Generation>> joined;
  for (size_t i = 0; i < ids.size(); ++i) {
    joined.push_back(std::async(std::launch::async, [&, i] {
      Membership membership(*store, options_for(ids[i], std::chrono::seconds(10)));
      return *membership.join(membership.first_generation(), /*commits=*/0);
    }));
  }
  std::vector<int> ranks;
  for (auto& future : joined) {
    const Generation generation = future.get();
    EXPECT_EQ(generation.number, 0);
    EXPECT_EQ(generation.size, 3);
    EXPECT_EQ(generation.local_size, 3);
    EXPECT_EQ(generation.local_rank, generation.rank);
    EXPECT_EQ(generation.members, ids);  // equal commits: by id
    ranks.push_back(generation.rank);
  }
  EXPECT_EQ(ranks, (std::vector<int>{0, 1, 2}));

  // 0.1.0 exits (its launcher marks it): the two others form generation 1 without waiting, and
  // the one with the later commit is rank 0.
  store->set("elastic/exited/0.1.0", "signal 9");
  const auto start = std::chrono::steady_clock::now();
  auto survivor = std::async(std::launch::async, [&] {
    Membership membership(*store, options_for("0.0.0", std::chrono::seconds(10)));
    return *membership.join(1, 4);
  });
  Membership other(*store, options_for("0.2.0", std::chrono::seconds(10)));
  const Generation second = *other.join(1, 5);
  const Generation first = survivor.get();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(second.rank, 0);
  EXPECT_EQ(first.rank, 1);
  EXPECT_EQ(first.members, (std::vector<std::string>{"0.2.0", "0.0.0"}));

  // A newcomer starts at the generation after the last closed one and is seen waiting.
  Membership newcomer(*store, options_for("0.1.1", std::chrono::seconds(10)));
  EXPECT_EQ(newcomer.first_generation(), 2);
  EXPECT_FALSE(other.joiners_waiting(1));
  auto joining = std::async(std::launch::async, [&] { return *newcomer.join(2, 0); });
  EXPECT_TRUE(wait_until_true([&] { return other.joiners_waiting(1); }));
  // The members come at their next commit; all three form generation 2.
  auto a = std::async(std::launch::async, [&] {
    Membership membership(*store, options_for("0.0.0", std::chrono::seconds(10)));
    return *membership.join(2, 6);
  });
  const Generation b = *other.join(2, 6);
  EXPECT_EQ(b.size, 3);
  EXPECT_EQ(a.get().size, 3);
  EXPECT_EQ(joining.get().rank, 2);  // no commits yet: last

  // Once the job is done, a late worker does not wait for anyone.
  other.mark_done(2);
  Membership latecomer(*store, options_for("0.3.0", std::chrono::seconds(10)));
  EXPECT_FALSE(latecomer.join(3, 0).has_value());
}

TEST(ElasticMembership, BelowTheMinimumAfterTheTimeoutNamesWhoIsMissing) {
  auto store = JobStore::in_process(std::chrono::seconds(10));
  store->set("elastic/g0/member/0", "0.0.0\th\t0");
  store->set("elastic/g0/member/1", "0.1.0\th\t0");
  store->add("elastic/g0/arrived", 2);
  store->set("elastic/g0/closed", "2");
  store->set("elastic/current", "0");
  auto options = options_for("0.0.0", std::chrono::milliseconds(300));
  options.min_workers = 2;
  Membership membership(*store, options);
  try {
    membership.join(1, 3);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("at least 2 needed"), std::string::npos) << what;
    EXPECT_NE(what.find("neither arrived nor exited: 0.1.0"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace gradwire::elastic::detail
