#include "harness/repeats.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gradwire/common/error.h"
#include "harness/pool.h"

namespace gradwire::bench {
namespace {

TEST(AlternatingRunsTest, OursThenTheReferenceInEachRepeat) {
  std::vector<std::string> calls;
  AlternatingRuns runs;
  runs.repeats = 3;
  runs.ours = [&](int repeat) { calls.push_back("ours " + std::to_string(repeat)); };
  runs.reference = [&](int repeat) {
    calls.push_back("reference " + std::to_string(repeat));
    return true;
  };
  runs.progress = [&](const std::string& line) { calls.push_back(line); };
  EXPECT_TRUE(run_alternating(runs));
  EXPECT_EQ(calls, (std::vector<std::string>{"repeat 1 of 3", "ours 1", "reference 1",
                                             "repeat 2 of 3", "ours 2", "reference 2",
                                             "repeat 3 of 3", "ours 3", "reference 3"}));
}

TEST(AlternatingRunsTest, OneRepeatSaysNothingAndNoReferenceIsFine) {
  std::vector<std::string> calls;
  AlternatingRuns runs;
  runs.ours = [&](int repeat) { calls.push_back("ours " + std::to_string(repeat)); };
  runs.progress = [&](const std::string& line) { calls.push_back(line); };
  EXPECT_TRUE(run_alternating(runs));
  EXPECT_EQ(calls, std::vector<std::string>{"ours 1"});
}

TEST(AlternatingRunsTest, AFailedReferenceStopsAfterItsRepeat) {
  int ours = 0;
  AlternatingRuns runs;
  runs.repeats = 3;
  runs.ours = [&](int) { ++ours; };
  runs.reference = [&](int repeat) { return repeat < 2; };
  EXPECT_FALSE(run_alternating(runs));
  EXPECT_EQ(ours, 2);
}

TEST(PoolInOrderTest, MergesEveryRepeatIntoTheFirstInOrder) {
  using Samples = std::vector<double>;
  std::vector<std::string> wheres;
  const auto merge = [&](Samples& into, const Samples& next, const std::string& where) {
    if (next.empty()) throw InvalidArgument(where + " measured nothing");
    wheres.push_back(where);
    append(into, next);
  };
  EXPECT_EQ(pool_in_order<Samples>({{1, 2}, {3}, {4, 5}}, merge), (Samples{1, 2, 3, 4, 5}));
  EXPECT_EQ(wheres, (std::vector<std::string>{"repeat 2", "repeat 3"}));
  EXPECT_EQ(pool_in_order<Samples>({}, merge), Samples{});
  EXPECT_THROW(pool_in_order<Samples>({{1}, {}}, merge), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::bench
