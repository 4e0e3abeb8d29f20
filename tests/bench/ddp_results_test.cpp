#include "cases/ddp_results.h"

#include <gtest/gtest.h>

#include "bench_process.h"
#include "gradwire/common/error.h"
#include "harness/report.h"

namespace gradwire::bench {
namespace {

using namespace testing;  // bench_process.h

DdpRound round_of(bool ddp, int ranks, std::vector<double> measurements) {
  DdpRound round;
  round.ddp = ddp;
  for (int rank = 0; rank < ranks; ++rank) round.ranks.push_back(rank);
  round.measurements = std::move(measurements);
  return round;
}

TEST(RoundLabelTest, NamesMachinesAndRanksAsUpstream) {
  EXPECT_EQ(round_label(round_of(false, 1, {1}), 2), "no ddp");
  EXPECT_EQ(round_label(round_of(true, 1, {1}), 2), "1M/1R");
  EXPECT_EQ(round_label(round_of(true, 2, {1}), 2), "1M/2R");
  EXPECT_EQ(round_label(round_of(true, 16, {1}), 8), "2M/8R");
  EXPECT_EQ(round_label(round_of(true, 4, {1}), 1), "4M/1R");
  // --side-by-side: plain training on every rank at once.
  EXPECT_EQ(round_label(round_of(false, 2, {1}), 2), "1M/2R no ddp");
}

TEST(SlowestRankTest, KeepsTheMeasurementsOfTheRankWithTheHighestMedian) {
  // Rank 1 has the highest median although rank 0 has the single slowest iteration.
  EXPECT_EQ(slowest_rank_measurements({0.10, 0.10, 0.90, 0.20, 0.20, 0.20, 0.15, 0.15, 0.15}, 3),
            (std::vector<double>{0.20, 0.20, 0.20}));
  EXPECT_EQ(slowest_rank_measurements({0.3, 0.4}, 1), (std::vector<double>{0.3, 0.4}));
  EXPECT_THROW(slowest_rank_measurements({0.1, 0.2, 0.3}, 2), InvalidArgument);
  EXPECT_THROW(slowest_rank_measurements({}, 2), InvalidArgument);
}

TEST(PoolRepeatsTest, ConcatenatesMeasurementsAndAveragesStats) {
  DdpModelResult first;
  first.model = "resnet18";
  first.batch_size = 8;
  first.rounds = {round_of(false, 1, {0.1, 0.2}), round_of(true, 2, {0.5, 0.6})};
  first.rounds[1].ddp_stats = {{"iterations", 1}, {"exposed_s", 0.01}, {"comm_hook", "a"}};
  DdpModelResult second = first;
  second.rounds[0].measurements = {0.3};
  second.rounds[1].measurements = {0.7, 0.8};
  second.rounds[1].ddp_stats = {{"iterations", 3}, {"exposed_s", 0.05}, {"comm_hook", "b"}};

  const auto pooled = pool_repeats({{first}, {second}});
  ASSERT_EQ(pooled.size(), 1u);
  EXPECT_EQ(pooled[0].rounds[0].measurements, (std::vector<double>{0.1, 0.2, 0.3}));
  EXPECT_EQ(pooled[0].rounds[1].measurements, (std::vector<double>{0.5, 0.6, 0.7, 0.8}));
  const auto& stats = pooled[0].rounds[1].ddp_stats;
  EXPECT_EQ(stats.at("iterations"), 4);
  EXPECT_NEAR(stats.at("exposed_s").get<double>(), (0.01 * 1 + 0.05 * 3) / 4, 1e-12);
  EXPECT_EQ(stats.at("comm_hook"), "b");
  EXPECT_TRUE(pooled[0].rounds[0].ddp_stats.is_null());
  EXPECT_EQ(pool_repeats({{first}}).front().rounds[1].measurements, first.rounds[1].measurements);

  DdpModelResult other = first;
  other.rounds[1].ranks = {0, 1, 2};
  EXPECT_THROW(pool_repeats({{first}, {other}}), InvalidArgument);
  EXPECT_THROW(pool_repeats({{first}, {}}), InvalidArgument);
}

TEST(DdpJsonTest, ResultsRoundTrip) {
  DdpModelResult result;
  result.model = "resnet18";
  result.batch_size = 8;
  result.rounds = {round_of(false, 1, {0.1, 0.2}), round_of(true, 1, {0.3, 0.4}),
                   round_of(true, 2, {0.5, 0.6, 0.7, 0.8})};
  result.rounds[2].ddp_stats = {{"iterations", 2}, {"exposed_s", 0.01}};
  nlohmann::json document = {{"schema_version", kSchemaVersion},
                             {"benchmark", "ddp"},
                             {"distributed_backend", "gloo"},
                             {"bucket_size", 25}};
  document["benchmark_results"] = to_json(std::vector<DdpModelResult>{result}, 2);
  // Through text, as a file would be.
  const DdpReport report = parse_ddp_document(nlohmann::json::parse(document.dump()), "memory");

  EXPECT_EQ(report.implementation, "gradwire");
  EXPECT_EQ(report.fields.at("bucket_size"), 25);
  EXPECT_FALSE(report.fields.contains("benchmark_results"));
  ASSERT_EQ(report.results.size(), 1u);
  const DdpModelResult& back = report.results[0];
  EXPECT_EQ(back.model, "resnet18");
  EXPECT_EQ(back.batch_size, 8);
  ASSERT_EQ(back.rounds.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.rounds[i].ddp, result.rounds[i].ddp);
    EXPECT_EQ(back.rounds[i].ranks, result.rounds[i].ranks);
    EXPECT_EQ(back.rounds[i].measurements, result.rounds[i].measurements);
  }
  EXPECT_EQ(back.rounds[2].ddp_stats.at("iterations"), 2);
  EXPECT_TRUE(back.rounds[0].ddp_stats.is_null());
  // The written entries carry upstream's fields and gradwire's label.
  const auto& entry = document["benchmark_results"][0]["result"][2];
  EXPECT_EQ(entry.at("ranks"), nlohmann::json({0, 1}));
  EXPECT_EQ(entry.at("label"), "1M/2R");
}

// GRADWIRE_TIMELINE_ALTERNATE_MS: a round's iterations marked recorded or not, and its figures.
TEST(DdpJsonTest, AnAlternatingTimelinesMarksRoundTripAndCompare) {
  DdpModelResult result;
  result.model = "cnn";
  result.batch_size = 8;
  result.rounds = {round_of(false, 1, {0.1, 0.2}), round_of(true, 2, {0.5, 0.6, 0.4, 0.9, 0.8})};
  result.rounds[1].timeline_recorded = {1, 0, 0, -1, 0};
  nlohmann::json document = {{"schema_version", kSchemaVersion}, {"benchmark", "ddp"}};
  document["benchmark_results"] = to_json(std::vector<DdpModelResult>{result}, 2);
  const nlohmann::json& entry = document["benchmark_results"][0]["result"][1];
  EXPECT_FALSE(document["benchmark_results"][0]["result"][0].contains("timeline_alternating"));
  const nlohmann::json& figures = entry.at("timeline_alternating");
  EXPECT_EQ(figures.at("recorded_iterations"), 1);
  EXPECT_EQ(figures.at("unrecorded_iterations"), 3);
  EXPECT_DOUBLE_EQ(figures.at("recorded_p50_sec_per_iteration").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(figures.at("unrecorded_p50_sec_per_iteration").get<double>(), 0.6);
  EXPECT_DOUBLE_EQ(figures.at("p50_ratio").get<double>(), 0.5 / 0.6);

  const DdpReport report = parse_ddp_document(nlohmann::json::parse(document.dump()), "memory");
  EXPECT_EQ(report.results[0].rounds[1].timeline_recorded, result.rounds[1].timeline_recorded);
  // Repeats pooled keep the marks in step with the measurements.
  const auto pooled = pool_repeats({report.results, report.results});
  EXPECT_EQ(pooled[0].rounds[1].timeline_recorded.size(), 10u);
  EXPECT_TRUE(pooled[0].rounds[0].timeline_recorded.empty());

  nlohmann::json short_marks = document;
  short_marks["benchmark_results"][0]["result"][1]["timeline_recorded"] = {1, 0};
  EXPECT_THROW(parse_ddp_document(short_marks, "short.json"), InvalidArgument);
}

TEST(DdpJsonTest, ReadsUpstreamFilesWithTheBaselineFirst) {
  const DdpReport report = read_ddp_file(fixture("ddp_pytorch_benchmark.json"));
  EXPECT_EQ(report.implementation, "pytorch benchmark.py");
  EXPECT_EQ(report.fields.at("pytorch_version"), "1.4.0a0+05140f0");
  ASSERT_EQ(report.results.size(), 2u);
  const auto& rounds = report.results[0].rounds;
  ASSERT_EQ(rounds.size(), 3u);
  EXPECT_FALSE(rounds[0].ddp);  // upstream marks "no ddp" by position only
  EXPECT_TRUE(rounds[1].ddp);
  EXPECT_EQ(rounds[1].world_size(), 1);
  EXPECT_EQ(rounds[2].world_size(), 2);
  EXPECT_EQ(rounds[2].measurements.size(), 10u);
}

TEST(DdpJsonTest, ReadsGradwireFiles) {
  const DdpReport report = read_ddp_file(fixture("ddp_gradwire.json"));
  EXPECT_EQ(report.implementation, "gradwire");
  ASSERT_EQ(report.results.size(), 2u);
  EXPECT_EQ(report.results[0].rounds[2].ddp_stats.at("comm_hook"), "allreduce");
  EXPECT_EQ(report.results[1].model, "cnn");
}

TEST(DdpJsonTest, RejectsOtherDocuments) {
  EXPECT_THROW(parse_ddp_document(
                   {{"schema_version", kSchemaVersion}, {"benchmark", "collectives"}}, "c.json"),
               InvalidArgument);
  EXPECT_THROW(parse_ddp_document({{"schema_version", 99}, {"benchmark", "ddp"}}, "v.json"),
               InvalidArgument);
  EXPECT_THROW(parse_ddp_document({{"pytorch_version", "1.4"}}, "empty.json"), InvalidArgument);
  const nlohmann::json no_measurements = {
      {"benchmark_results",
       {{{"model", "m"},
         {"batch_size", 1},
         {"result", {{{"ranks", {0}}, {"measurements", nlohmann::json::array()}}}}}}}};
  EXPECT_THROW(parse_ddp_document(no_measurements, "n.json"), InvalidArgument);
  EXPECT_THROW(read_ddp_file(fixture("does_not_exist.json")), Error);
}

}  // namespace
}  // namespace gradwire::bench
