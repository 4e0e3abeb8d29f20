#include "harness/repeats.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

// Each call is recorded; the reference writes a document on "rank 0" only (`reports`).
AlternatingRuns<int> recorded(std::vector<std::string>& calls, int repeats, bool reports) {
  AlternatingRuns<int> runs;
  runs.repeats = repeats;
  runs.ours = [&calls](int repeat) {
    calls.push_back("ours " + std::to_string(repeat));
    return repeat;
  };
  runs.reference = [&calls, reports](int repeat, nlohmann::json& document) {
    calls.push_back("reference " + std::to_string(repeat));
    if (reports) document = {{"repeat", repeat}};
    return true;
  };
  runs.reference_result = [](const nlohmann::json& document) {
    return 10 * document.at("repeat").get<int>();
  };
  runs.progress = [&calls](const std::string& line) { calls.push_back(line); };
  return runs;
}

TEST(AlternatingRunsTest, OursThenTheReferenceInEachRepeatKeepingBothSides) {
  std::vector<std::string> calls;
  Repeats<int> repeats;
  EXPECT_TRUE(run_alternating(recorded(calls, 3, true), repeats));
  EXPECT_EQ(calls, (std::vector<std::string>{"repeat 1 of 3", "ours 1", "reference 1",
                                             "repeat 2 of 3", "ours 2", "reference 2",
                                             "repeat 3 of 3", "ours 3", "reference 3"}));
  EXPECT_EQ(repeats.ours, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(repeats.reference, (std::vector<int>{10, 20, 30}));
  EXPECT_EQ(repeats.reference_document, (nlohmann::json{{"repeat", 1}}));  // the first

  // A rank that does not report runs the reference but keeps no document.
  Repeats<int> silent;
  calls.clear();
  EXPECT_TRUE(run_alternating(recorded(calls, 2, false), silent));
  EXPECT_TRUE(silent.reference.empty());
  EXPECT_TRUE(silent.reference_document.is_null());
}

TEST(AlternatingRunsTest, OneRepeatSaysNothingAndNoReferenceIsFine) {
  std::vector<std::string> calls;
  AlternatingRuns<int> runs = recorded(calls, 1, true);
  runs.reference = nullptr;
  Repeats<int> repeats;
  EXPECT_TRUE(run_alternating(runs, repeats));
  EXPECT_EQ(calls, std::vector<std::string>{"ours 1"});
  EXPECT_TRUE(repeats.reference_document.is_null());
  EXPECT_EQ(reference_order(1), "run after gradwire");
  EXPECT_EQ(reference_order(3), "alternating with gradwire, 3 times");
}

TEST(AlternatingRunsTest, AFailedReferenceStopsAfterItsRepeat) {
  std::vector<std::string> calls;
  AlternatingRuns<int> runs = recorded(calls, 3, true);
  runs.reference = [](int repeat, nlohmann::json&) { return repeat < 2; };
  Repeats<int> repeats;
  EXPECT_FALSE(run_alternating(runs, repeats));
  EXPECT_EQ(repeats.ours.size(), 2u);
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
