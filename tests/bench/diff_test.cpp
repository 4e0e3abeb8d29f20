// gradwire-bench diff against hand-written fixtures with known numbers: an upstream
// benchmark.py file (baseline) and a gradwire-bench ddp file (test).
#include "cases/diff.h"

#include <gtest/gtest.h>

#include <sstream>

#include "bench_process.h"

namespace gradwire::bench {
// A namespace of its own: in the unity build its helpers meet other files'.
namespace diff_test {
namespace {

using namespace testing;  // bench_process.h

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

bool contains_line(const std::vector<std::string>& lines, const std::string& expected) {
  for (const auto& line : lines) {
    if (line == expected) return true;
  }
  return false;
}

TEST(DeltaPercentTest, PositiveWhenTheTestIsFaster) {
  EXPECT_DOUBLE_EQ(delta_percent(0.2, 0.1), 50.0);
  EXPECT_DOUBLE_EQ(delta_percent(0.1, 0.2), -100.0);
  EXPECT_DOUBLE_EQ(delta_percent(0.0, 0.2), 0.0);
}

TEST(DescribeFieldTest, PrintsValuesAsTheSettingsBlockShowsThem) {
  EXPECT_EQ(describe_field(nullptr), "unset");
  EXPECT_EQ(describe_field(nlohmann::json::parse(R"({"ps": 1, "cuda": null})")),
            "{cuda unset, ps 1}");
  EXPECT_EQ(describe_field("gloo"), "gloo");
  EXPECT_EQ(describe_field(25), "25");
  EXPECT_EQ(describe_field(2.5), "2.5");
  EXPECT_EQ(describe_field(nlohmann::json({"a", "b"})), "a b");
  EXPECT_EQ(describe_field("one line\n"), "one line");
  EXPECT_EQ(describe_field("GPU0\tX\nGPU1\tNV1\n"), "(2 lines)");
}

class FixtureDiffTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ostringstream out;
    print_ddp_diff(out, read_ddp_file(fixture("ddp_pytorch_benchmark.json")),
                   read_ddp_file(fixture("ddp_gradwire.json")));
    text_ = out.str();
    lines_ = lines_of(text_);
  }
  std::string text_;
  std::vector<std::string> lines_;
};

TEST_F(FixtureDiffTest, SettingsSideBySide) {
  EXPECT_TRUE(contains_line(
      lines_, "implementation:        pytorch benchmark.py  vs              gradwire"))
      << text_;
  EXPECT_TRUE(contains_line(
      lines_, "bucket_size:                             25  vs                    25"))
      << text_;
  EXPECT_TRUE(contains_line(
      lines_, "cuda_version:                          10.0  vs                 unset"))
      << text_;
  EXPECT_TRUE(contains_line(
      lines_, "hardware.cpu_model:                       -  vs              Test CPU"))
      << text_;
  // The harness metadata repeats other fields and is left out.
  EXPECT_EQ(text_.find("hostname"), std::string::npos) << text_;
}

TEST_F(FixtureDiffTest, KnownPercentilesAndDeltas) {
  // Baseline no ddp: all 0.1 s; test 0.08 s: 32/0.1 = 320/s, 32/0.08 = 400/s, +20 %.
  EXPECT_TRUE(contains_line(
      lines_,
      "    no ddp:  p75:   0.1000s   320.0/s    0.0800s   400.0/s   +20.0%  p95:   0.1000s   "
      "320.0/s    0.0800s   400.0/s   +20.0%"))
      << text_;
  // 1 rank: baseline sorted 0.11..0.15 (p75 0.14, p95 0.148); test p75 0.112, p95 0.1184.
  EXPECT_TRUE(contains_line(
      lines_,
      "   1 ranks:  p75:   0.1400s   228.6/s    0.1120s   285.7/s   +20.0%  p95:   0.1480s   "
      "216.2/s    0.1184s   270.3/s   +20.0%"))
      << text_;
  // 2 ranks: baseline eight 0.2 and two 0.25; test eight 0.22 and two 0.3: slower.
  EXPECT_TRUE(contains_line(
      lines_,
      "   2 ranks:  p75:   0.2000s   160.0/s    0.2200s   145.5/s   -10.0%  p95:   0.2500s   "
      "128.0/s    0.3000s   106.7/s   -20.0%"))
      << text_;
}

TEST_F(FixtureDiffTest, NamesModelsPresentInOneFileOnly) {
  EXPECT_TRUE(contains_line(lines_, "Benchmark: resnet50 with batch size 32")) << text_;
  EXPECT_TRUE(contains_line(lines_, "Benchmark: resnet101 with batch size 32: only in baseline"))
      << text_;
  EXPECT_TRUE(contains_line(lines_, "Benchmark: cnn with batch size 32: only in test")) << text_;
}

TEST(DiffTest, ConfigurationsMissingOnOneSideAreNamed) {
  DdpModelResult a{"m", 4, {}};
  DdpRound baseline;
  baseline.ddp = false;
  baseline.ranks = {0};
  baseline.measurements = {1.0};
  DdpRound two;
  two.ranks = {0, 1};
  two.measurements = {2.0};
  a.rounds = {baseline, two};
  DdpRound side_by_side = two;  // --side-by-side: plain training on both ranks at once
  side_by_side.ddp = false;
  a.rounds.push_back(side_by_side);
  DdpModelResult b{"m", 4, {baseline}};
  DdpReport left;
  left.results = {a};
  DdpReport right;
  right.results = {b};
  std::ostringstream out;
  print_ddp_diff(out, left, right);
  EXPECT_TRUE(contains_line(lines_of(out.str()), "   2 ranks:  (only in baseline)")) << out.str();
  EXPECT_TRUE(contains_line(lines_of(out.str()), " 2R no ddp:  (only in baseline)")) << out.str();
  // Identical data: no change.
  EXPECT_NE(out.str().find("  +0.0%"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace diff_test
}  // namespace gradwire::bench
