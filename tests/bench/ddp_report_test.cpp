#include "cases/ddp_report.h"

#include <gtest/gtest.h>

#include <sstream>

namespace gradwire::bench {
namespace {

TEST(FormatSecondsTest, KeepsSmallTimesReadable) {
  EXPECT_EQ(format_seconds(1.23456), "1.235");
  EXPECT_EQ(format_seconds(0.157), "0.1570");
  EXPECT_EQ(format_seconds(0.0123), "0.0123");
  EXPECT_EQ(format_seconds(0.000556), "0.000556");
}

TEST(DdpTableTest, RowsShowFourPercentilesOfSecondsAndExamplesPerSecond) {
  DdpRound round;
  round.ranks = {0, 1};
  // Sorted 0.1, 0.2, 0.3, 0.4, 0.5: p50 0.3, p75 0.4, p90 0.46, p95 0.48.
  round.measurements = {0.5, 0.1, 0.4, 0.2, 0.3};
  EXPECT_EQ(ddp_row(round, "1M/2R", 8),
            "   2 ranks --    1M/2R:  p50:   0.3000s    26.7/s  p75:   0.4000s    20.0/s"
            "  p90:   0.4600s    17.4/s  p95:   0.4800s    16.7/s");
  // The headers sit over the value columns.
  const std::string header = ddp_table_header();
  const std::string row = ddp_row(round, "1M/2R", 8);
  EXPECT_EQ(header.find("sec/iter") + 8, row.find("0.3000s") + 7);
  EXPECT_EQ(header.find("ex/sec") + 6, row.find("26.7/s") + 6);
  EXPECT_EQ(ddp_benchmark_title("resnet50", 32), "Benchmark: resnet50 with batch size 32");
}

TEST(DdpTableTest, ComputeParitySaysWhenThePlainStepsDifferByMoreThanTenPercent) {
  const auto close = compute_parity_lines({0.095}, {0.1});
  ASSERT_EQ(close.size(), 1u);
  EXPECT_EQ(close[0], "plain step (no ddp): gradwire p50 0.0950s, pytorch p50 0.1000s, 0.950x");
  const auto apart = compute_parity_lines({0.32}, {0.0865});
  ASSERT_EQ(apart.size(), 2u);
  EXPECT_NE(apart[1].find("differ by more than 10%"), std::string::npos) << apart[1];
  EXPECT_EQ(compute_parity_lines({0.08}, {0.1}).size(), 2u);  // faster by more than 10% too
  EXPECT_TRUE(compute_parity_lines({}, {0.1}).empty());
}

TEST(DdpComparisonTest, MatchesRoundsAndNamesMissingOnes) {
  DdpRound baseline;
  baseline.ddp = false;
  baseline.ranks = {0};
  baseline.measurements = {0.1};
  DdpRound two;
  two.ranks = {0, 1};
  two.measurements = {0.2, 0.2};
  const std::vector<DdpModelResult> ours = {{"resnet18", 8, {baseline, two}},
                                            {"cnn", 8, {baseline}}};
  DdpReport reference;
  DdpRound their_baseline = baseline;
  their_baseline.measurements = {0.2};
  reference.results = {{"resnet18", 8, {their_baseline}}};
  ASSERT_NE(find_matching_model(reference.results, "resnet18", 8), nullptr);
  EXPECT_EQ(find_matching_model(reference.results, "resnet18", 16), nullptr);
  EXPECT_EQ(find_matching_round(reference.results[0], two), nullptr);

  std::ostringstream out;
  print_ddp_comparison(out, ours, reference, 2, "reference: test");
  const std::string text = out.str();
  EXPECT_NE(text.find("--- reference: test ---"), std::string::npos) << text;
  // The training cases' comparison, of sec/iter: the All rows (examples of every rank) and ratios.
  EXPECT_NE(text.find("--- Benchmark: resnet18 with batch size 8, no ddp ---"), std::string::npos)
      << text;
  EXPECT_NE(text.find("(gradwire/pytorch: ratio of sec/iter; below 1 means gradwire is faster)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gradwire      All:  p50:   0.1000s    80.0/s"), std::string::npos) << text;
  EXPECT_NE(text.find("pytorch       All:  p50:   0.2000s    40.0/s"), std::string::npos) << text;
  EXPECT_NE(text.find("gradwire/pytorch sec/iter: p50: 0.50x"), std::string::npos) << text;
  EXPECT_NE(
      text.find("Benchmark: resnet18 with batch size 8, 1M/2R: not measured by the reference"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("Benchmark: cnn with batch size 8: the reference did not measure this model"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("plain step (no ddp): gradwire p50 0.1000s, pytorch p50 0.2000s, 0.500x"),
            std::string::npos)
      << text;
}

TEST(DdpComparisonTest, RoundsAreSidesOfOneTrainerPerRank) {
  DdpRound two;
  two.ranks = {0, 1};
  two.measurements = {0.1, 0.2, 0.3, 0.4};
  const TrainerResults side = round_side(two, 8, "gradwire");
  EXPECT_EQ(side.implementation, "gradwire");
  ASSERT_EQ(side.trainers.size(), 2u);
  EXPECT_EQ(side.trainers[1].trainer, 1);
  EXPECT_EQ(side.trainers[1].seconds, (std::vector<double>{0.3, 0.4}));
  EXPECT_EQ(side.trainers[1].examples, (std::vector<std::int64_t>{8, 8}));
  two.measurements = {0.1, 0.2, 0.3};  // do not divide: one trainer
  EXPECT_EQ(round_side(two, 8, "gradwire").trainers.size(), 1u);
  two.ddp = false;  // --side-by-side: the slowest rank's only
  two.measurements = {0.1, 0.2};
  EXPECT_EQ(round_side(two, 8, "gradwire").trainers.size(), 1u);
}

TEST(DdpComparisonTest, RatioOfEveryRepeat) {
  DdpRound two;
  two.ranks = {0, 1};
  auto with = [&](std::vector<double> seconds) {
    DdpRound round = two;
    round.measurements = std::move(seconds);
    return std::vector<DdpModelResult>{{"resnet18", 8, {round}}};
  };
  DdpRepeats repeats;
  repeats.ours = {with({0.2, 0.2}), with({0.3, 0.3}), with({0.1, 0.1})};
  repeats.reference = {with({0.4, 0.4}), with({0.3, 0.3}), with({0.4, 0.4})};
  const auto ratios = p50_ratio_by_repeat(repeats, "resnet18", 8, two);
  ASSERT_EQ(ratios.size(), 3u);
  EXPECT_DOUBLE_EQ(ratios[0], 0.5);
  EXPECT_DOUBLE_EQ(ratios[1], 1.0);
  EXPECT_DOUBLE_EQ(ratios[2], 0.25);
  EXPECT_TRUE(p50_ratio_by_repeat(repeats, "resnet50", 8, two).empty());

  DdpReport reference;
  reference.results = pool_repeats(repeats.reference);
  std::ostringstream out;
  print_ddp_comparison(out, pool_repeats(repeats.ours), reference, 2, "reference: test", repeats);
  EXPECT_NE(out.str().find("p50 ratio by repeat: 0.50x 1.00x 0.25x, median 0.50x"),
            std::string::npos)
      << out.str();
}

TEST(DdpHeaderTest, ShowsVersionsBucketAndHardware) {
  DdpHeader header;
  header.gradwire_version = "0.1.0";
  header.torch_version = "1.13.0";
  header.backend = "gloo";
  header.ranks = 2;
  header.ranks_per_node = 2;
  header.hardware.cpu_model = "Test CPU";
  header.hardware.cores = 2;
  std::ostringstream out;
  print_ddp_header(out, header);
  EXPECT_NE(out.str().find("* Distributed backend: gloo"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("* Maximum bucket size: 25MB"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("--- CPU ---"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("Test CPU, 2 cores, 1 thread per rank"), std::string::npos);

  header.hardware.gpu_topology = "\tGPU0\nGPU0\t X \n";
  header.reference = "skipped: no torch";
  std::ostringstream gpu;
  print_ddp_header(gpu, header);
  EXPECT_NE(gpu.str().find("--- nvidia-smi topo -m ---\n\n\tGPU0\nGPU0\t X \n"), std::string::npos)
      << gpu.str();
  EXPECT_NE(gpu.str().find("* Reference: skipped: no torch"), std::string::npos);
}

}  // namespace
}  // namespace gradwire::bench
