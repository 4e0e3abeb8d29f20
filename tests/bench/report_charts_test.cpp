// The charts gradwire-bench report draws, from hand-written fixtures with known numbers: ddp
// results of gradwire (with and without an embedded PyTorch reference) and of PyTorch's
// benchmark.py, a reducers result, generic rows; and the documents it refuses.
#include <gtest/gtest.h>

#include <string>

#include "bench_process.h"
#include "cases/ddp_results.h"
#include "gradwire/common/error.h"
#include "report/charts.h"
#include "report/html_report.h"

namespace gradwire::bench {
namespace {

using namespace testing;  // bench_process.h

constexpr double kTolerance = 1e-12;

const ChartSeries& series_named(const ChartSpec& chart, const std::string& name) {
  for (const auto& series : chart.series) {
    if (series.name == name) return series;
  }
  throw std::runtime_error("no series " + name + " in " + chart.title);
}

// Expects the series' points to be exactly (xs[i], ys[i]).
void expect_points(const ChartSeries& series, const std::vector<double>& xs,
                   const std::vector<double>& ys) {
  ASSERT_EQ(series.points.size(), xs.size()) << series.name;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    EXPECT_DOUBLE_EQ(series.points[i].x, xs[i]) << series.name << " point " << i;
    EXPECT_NEAR(series.points[i].y, ys[i], kTolerance) << series.name << " point " << i;
  }
}

std::string refusal(const nlohmann::json& document, const std::string& source = "in.json") {
  try {
    charts_from_document(document, source);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(accepted)";
}

// ddp results are drawn from the rows of their benchmark_results (ddp_rows): a chart per model.
constexpr const char* kGradwireDdp = "implementation gradwire, configuration ddp";
constexpr const char* kPyTorchDdp = "implementation pytorch, configuration ddp";

TEST(DdpChartsTest, GradwireResultPerModelWithBaseline) {
  const auto charts = charts_from_document(fixture_json("ddp_gradwire.json"), "g.json");
  ASSERT_EQ(charts.size(), 2u);
  const ChartSpec& resnet = charts[0];
  EXPECT_EQ(resnet.title, "ddp: model resnet50, batch size 32");
  EXPECT_EQ(resnet.subtitle, "g.json: ddp");
  EXPECT_EQ(resnet.x_label, "ranks");
  EXPECT_EQ(resnet.y_unit, "s");
  EXPECT_EQ(resnet.x_scale, AxisScale::kLinear);
  EXPECT_EQ(resnet.x_values, (std::vector<double>{1, 2}));
  ASSERT_EQ(resnet.series.size(), 2u);
  // 1 rank: sorted 0.1 .. 0.12, p50 0.11, p90 at 3.6: 0.112 + 0.6 * 0.008. 2 ranks: eight 0.22
  // and two 0.3.
  const std::string p50 = std::string(kGradwireDdp) + " p50";
  const std::string p90 = std::string(kGradwireDdp) + " p90";
  expect_points(series_named(resnet, p50), {1, 2}, {0.11, 0.22});
  expect_points(series_named(resnet, p90), {1, 2}, {0.1168, 0.3});
  EXPECT_FALSE(series_named(resnet, p50).dashed);
  EXPECT_TRUE(series_named(resnet, p90).dashed);
  EXPECT_EQ(series_named(resnet, p50).group, kGradwireDdp);
  EXPECT_EQ(series_named(resnet, p50).points[0].note, "5 samples");
  ASSERT_EQ(resnet.baselines.size(), 1u);
  EXPECT_EQ(resnet.baselines[0].name, "implementation gradwire, configuration no ddp (p50)");
  EXPECT_NEAR(resnet.baselines[0].y, 0.08, kTolerance);

  // cnn has only its baseline.
  EXPECT_EQ(charts[1].title, "ddp: model cnn, batch size 32");
  EXPECT_TRUE(charts[1].series.empty());
  EXPECT_TRUE(charts[1].x_values.empty());
  ASSERT_EQ(charts[1].baselines.size(), 1u);
  EXPECT_NEAR(charts[1].baselines[0].y, 0.001, kTolerance);
}

TEST(DdpChartsTest, EmbeddedReferenceAddsPyTorchSeries) {
  const auto charts = charts_from_document(fixture_json("ddp_gradwire_reference.json"), "r.json");
  ASSERT_EQ(charts.size(), 2u);
  const ChartSpec& resnet = charts[0];
  // World sizes 1, 2, 4 span two doublings: a log2 axis.
  EXPECT_EQ(resnet.x_scale, AxisScale::kLog2);
  EXPECT_EQ(resnet.x_values, (std::vector<double>{1, 2, 4}));
  ASSERT_EQ(resnet.series.size(), 4u);
  const std::string ours = kGradwireDdp;
  const std::string theirs = kPyTorchDdp;
  expect_points(series_named(resnet, ours + " p50"), {1, 2, 4}, {0.2, 0.25, 0.4});
  expect_points(series_named(resnet, ours + " p90"), {1, 2, 4}, {0.216, 0.3, 0.4});
  expect_points(series_named(resnet, theirs + " p50"), {1, 2}, {0.2, 0.25});
  expect_points(series_named(resnet, theirs + " p90"), {1, 2}, {0.2, 0.258});
  EXPECT_EQ(series_named(resnet, theirs + " p90").group, theirs);
  ASSERT_EQ(resnet.baselines.size(), 2u);
  EXPECT_EQ(resnet.baselines[0].name, "implementation gradwire, configuration no ddp (p50)");
  EXPECT_NEAR(resnet.baselines[0].y, 0.17, kTolerance);
  EXPECT_EQ(resnet.baselines[1].name, "implementation pytorch, configuration no ddp (p50)");
  EXPECT_NEAR(resnet.baselines[1].y, 0.16, kTolerance);

  // The reference has no cnn: gradwire's series only.
  const ChartSpec& cnn = charts[1];
  ASSERT_EQ(cnn.series.size(), 2u);
  expect_points(series_named(cnn, ours + " p50"), {1}, {0.002});
}

TEST(DdpChartsTest, PyTorchBenchmarkFileFirstRoundIsTheBaseline) {
  const auto charts = charts_from_document(fixture_json("ddp_pytorch_benchmark.json"), "p.json");
  ASSERT_EQ(charts.size(), 2u);
  const std::string upstream = "implementation pytorch benchmark.py, configuration ddp";
  expect_points(series_named(charts[0], upstream + " p50"), {1, 2}, {0.13, 0.2});
  expect_points(series_named(charts[0], upstream + " p90"), {1, 2}, {0.146, 0.25});
  ASSERT_EQ(charts[0].baselines.size(), 1u);
  EXPECT_NEAR(charts[0].baselines[0].y, 0.1, kTolerance);
  EXPECT_EQ(charts[1].title, "ddp: model resnet101, batch size 32");
  expect_points(series_named(charts[1], upstream + " p50"), {1}, {0.31});
}

TEST(DdpChartsTest, VariantsAndSideBySideAreSeriesOfTheirOwn) {
  DdpRound baseline;
  baseline.ddp = false;
  baseline.ranks = {0};
  baseline.measurements = {0.1};
  DdpRound side_by_side = baseline;
  side_by_side.ranks = {0, 1};
  DdpRound shm;
  shm.ranks = {0, 1};
  shm.measurements = {0.2, 0.2};
  shm.backend = "shm";
  shm.comm_hook = "bf16";
  DdpReport report;
  report.implementation = "gradwire";
  report.results = {{"cnn", 8, {baseline, side_by_side, shm}}};
  const RowSet rows = ddp_rows(report, "m.json");
  ASSERT_EQ(rows.rows.size(), 3u);
  EXPECT_FALSE(rows.rows[0].labels.contains("ranks"));
  EXPECT_EQ(rows.rows[1].labels.at("ranks"), 2);
  EXPECT_EQ(rows.rows[1].labels.at("configuration"), "no ddp");
  EXPECT_EQ(rows.rows[2].labels.at("configuration"), "ddp shm+bf16");
  const auto charts = rows_charts(rows, "ddp", "m.json");
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0].baselines.size(), 1u);
  expect_points(series_named(charts[0], "implementation gradwire, configuration no ddp p50"), {2},
                {0.1});
  expect_points(series_named(charts[0], "implementation gradwire, configuration ddp shm+bf16 p50"),
                {2}, {0.2});
}

TEST(ReducersChartsTest, ForwardAndBackwardPerReducer) {
  const auto charts = charts_from_document(fixture_json("reducers.json"), "red.json");
  ASSERT_EQ(charts.size(), 2u);
  const ChartSpec& forward = charts[0];
  const ChartSpec& backward = charts[1];
  EXPECT_EQ(forward.title, "forward latency: resnet50, batch size 32, 2 ranks");
  EXPECT_EQ(backward.title, "backward latency: resnet50, batch size 32, 2 ranks");
  EXPECT_EQ(forward.subtitle, "red.json: reducers");
  EXPECT_EQ(forward.x_label, "bucket size (MiB)");
  EXPECT_EQ(forward.y_label, "forward ms per iteration");
  EXPECT_EQ(forward.y_unit, "ms");
  EXPECT_EQ(forward.x_values, (std::vector<double>{1, 5, 25}));
  EXPECT_EQ(forward.x_scale, AxisScale::kLog2);
  EXPECT_TRUE(forward.baselines.empty());

  ASSERT_EQ(forward.series.size(), 6u);
  const std::vector<std::string> names = {"overlapped p50", "overlapped mean", "async p50",
                                          "async mean",     "sync p50",        "sync mean"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(forward.series[i].name, names[i]);
    EXPECT_EQ(backward.series[i].name, names[i]);
    EXPECT_EQ(forward.series[i].dashed, i % 2 == 1) << names[i];
  }
  EXPECT_EQ(forward.series[2].group, "async");
  expect_points(series_named(forward, "overlapped p50"), {1, 5, 25}, {10.0, 10.0, 9.9});
  expect_points(series_named(forward, "overlapped mean"), {1, 5, 25}, {10.5, 10.3, 10.1});
  expect_points(series_named(forward, "async p50"), {1, 5, 25}, {10.2, 10.1, 10.0});
  expect_points(series_named(forward, "sync mean"), {1, 5, 25}, {10.4, 10.2, 10.0});
  expect_points(series_named(backward, "overlapped p50"), {1, 5, 25}, {30.0, 24.0, 26.0});
  expect_points(series_named(backward, "async mean"), {1, 5, 25}, {29.0, 23.8, 26.0});
  expect_points(series_named(backward, "sync p50"), {1, 5, 25}, {45.0, 40.0, 38.0});
  expect_points(series_named(backward, "sync mean"), {1, 5, 25}, {46.5, 41.0, 39.5});
  EXPECT_EQ(series_named(backward, "sync p50").points[1].note, "9 buckets");
}

TEST(ReducersChartsTest, PointsAreSortedAndReducersKeepFirstAppearanceOrder) {
  const nlohmann::json summary = {{"mean", 2.0}, {"p50", 1.0}};
  const nlohmann::json document = {
      {"schema_version", kSchemaVersion},
      {"benchmark", "reducers"},
      {"results",
       {{{"bucket_size_mb", 8},
         {"reducers", {{{"reducer", "b"}, {"forward_ms", summary}, {"backward_ms", summary}}}}},
        {{"bucket_size_mb", 2},
         {"reducers",
          {{{"reducer", "a"}, {"forward_ms", summary}, {"backward_ms", summary}},
           {{"reducer", "b"}, {"forward_ms", summary}, {"backward_ms", summary}}}}}}}};
  const auto charts = charts_from_document(document, "x.json");
  ASSERT_EQ(charts.size(), 2u);
  EXPECT_EQ(charts[0].title, "forward latency");  // no settings
  ASSERT_EQ(charts[0].series.size(), 4u);
  EXPECT_EQ(charts[0].series[0].name, "b p50");
  EXPECT_EQ(charts[0].series[2].name, "a p50");
  expect_points(charts[0].series[0], {2, 8}, {1.0, 1.0});
  expect_points(charts[0].series[1], {2, 8}, {2.0, 2.0});
  expect_points(charts[0].series[2], {2}, {1.0});
  EXPECT_TRUE(charts[0].series[0].points[0].note.empty());
}

// Any other result is drawn from its generic rows (harness/rows.h): a chart per chart_by value.
TEST(RowsChartsTest, OneChartPerChartByValueWithP50AndP90) {
  const nlohmann::json rows = {
      {"unit", "us"},
      {"x", "bytes"},
      {"chart_by", "op"},
      {"dimensions", {"op", "bytes"}},
      {"entries",
       {{{"labels", {{"op", "allreduce"}, {"bytes", 16}}}, {"samples", {2.0, 4.0}}},
        {{"labels", {{"op", "allreduce"}, {"bytes", 8}}}, {"samples", {1.0}}},
        {{"labels", {{"op", "broadcast"}, {"bytes", 8}}}, {"samples", {5.0}}}}}};
  const auto charts = charts_from_document(
      {{"schema_version", kSchemaVersion}, {"benchmark", "collectives"}, {"rows", rows}}, "c.json");
  ASSERT_EQ(charts.size(), 2u);
  EXPECT_EQ(charts[0].title, "collectives: op allreduce");
  EXPECT_EQ(charts[0].x_label, "bytes");
  expect_points(series_named(charts[0], "collectives p50"), {8, 16}, {1.0, 3.0});
  expect_points(series_named(charts[0], "collectives p90"), {8, 16}, {1.0, 3.8});
  expect_points(series_named(charts[1], "collectives p50"), {8}, {5.0});
}

TEST(ChartsRefusalTest, NamesTheFileAndTheReason) {
  EXPECT_NE(refusal(nlohmann::json::array()).find("in.json is not a JSON object"),
            std::string::npos);
  const std::string version = refusal({{"schema_version", 1}, {"benchmark", "ddp"}});
  EXPECT_NE(version.find("in.json has schema_version 1"), std::string::npos) << version;
  const std::string collectives =
      refusal({{"schema_version", kSchemaVersion}, {"benchmark", "collectives"}});
  EXPECT_NE(collectives.find("in.json holds results of gradwire-bench collectives"),
            std::string::npos)
      << collectives;
  EXPECT_NE(collectives.find("ddp, reducers"), std::string::npos) << collectives;
  EXPECT_NE(refusal({{"schema_version", kSchemaVersion}, {"benchmark", "mystery"}}).find("mystery"),
            std::string::npos);
  EXPECT_NE(refusal({{"schema_version", kSchemaVersion}}).find("names no benchmark"),
            std::string::npos);
  EXPECT_NE(refusal({{"hello", 1}}).find("has no schema_version"), std::string::npos);
}

TEST(ChartsRefusalTest, MalformedReducersEntriesAreNamed) {
  const std::string no_results =
      refusal({{"schema_version", kSchemaVersion}, {"benchmark", "reducers"}});
  EXPECT_NE(no_results.find("in.json has no \"results\""), std::string::npos) << no_results;
  nlohmann::json document = fixture_json("reducers.json");
  document["results"][1]["reducers"][2].erase("backward_ms");
  const std::string missing = refusal(document);
  EXPECT_NE(missing.find("in.json results[1].reducers[2] has no \"backward_ms\""),
            std::string::npos)
      << missing;
  document = fixture_json("reducers.json");
  document["results"][0]["reducers"][0]["forward_ms"]["p50"] = "fast";
  const std::string wrong = refusal(document);
  EXPECT_NE(wrong.find("results[0].reducers[0].forward_ms: \"p50\" is \"fast\", not a number"),
            std::string::npos)
      << wrong;
  document = fixture_json("ddp_gradwire.json");
  document["benchmark_results"][0]["result"][1]["measurements"] = "many";
  EXPECT_NE(refusal(document).find("in.json"), std::string::npos);
}

TEST(FinishChartTest, SortsPointsAndPicksTheScale) {
  ChartSpec chart;
  chart.series.push_back({"s", "g", false, {{4, 1, ""}, {1, 2, ""}, {2, 3, ""}}});
  chart.series.push_back({"t", "g", true, {{3, 1, ""}, {1, 1, ""}}});
  finish_chart(chart);
  EXPECT_EQ(chart.x_values, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(chart.series[0].points[0].y, 2);
  EXPECT_EQ(chart.x_scale, AxisScale::kLog2);
  chart.series.push_back({"u", "g", false, {{0, 1, ""}}});
  finish_chart(chart);
  EXPECT_EQ(chart.x_scale, AxisScale::kLinear);  // 0 has no logarithm
  ChartSpec close;
  close.series.push_back({"s", "g", false, {{3, 1, ""}, {5, 1, ""}}});
  finish_chart(close);
  EXPECT_EQ(close.x_scale, AxisScale::kLinear);
}

TEST(ChartJsonTest, CarriesEveryField) {
  const auto charts = charts_from_document(fixture_json("reducers.json"), "red.json");
  const nlohmann::json json = to_json(charts[1]);
  EXPECT_EQ(json.at("title"), "backward latency: resnet50, batch size 32, 2 ranks");
  EXPECT_EQ(json.at("x_scale"), "log2");
  EXPECT_EQ(json.at("x_unit"), "MiB");
  EXPECT_EQ(json.at("x_values"), nlohmann::json({1, 5, 25}));
  EXPECT_EQ(json.at("series").size(), 6u);
  EXPECT_EQ(json.at("series")[5].at("name"), "sync mean");
  EXPECT_EQ(json.at("series")[5].at("dashed"), true);
  EXPECT_EQ(json.at("series")[5].at("points")[2],
            nlohmann::json({{"x", 25.0}, {"y", 39.5}, {"note", "3 buckets"}}));
  EXPECT_TRUE(json.at("baselines").empty());
}

}  // namespace
}  // namespace gradwire::bench
