#include "harness/repeats.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

}  // namespace
}  // namespace gradwire::bench
