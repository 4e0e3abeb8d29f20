// gradwire-bench hybrid as a training case (hybrid_case.h, the generic trainer_report.h):
// results <-> JSON, percentiles, the tables in PyTorch's DDP + RPC benchmark's layout, the phase
// split, the comparison, the header and the JSON document, against the fixtures
// (hybrid_result.json, whose numbers make every cell computable by hand; hybrid_table.txt and
// hybrid_document.json hold what the code must print and write for it).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "bench_process.h"
#include "cases/hybrid_case.h"
#include "cases/trainer_report.h"
#include "gradwire/common/error.h"
#include "report/charts.h"

namespace gradwire::bench {
namespace {

using namespace testing;  // bench_process.h
using HybridResult = TrainerResults;

HybridResult parse_hybrid_result(const nlohmann::json& document, const std::string& source) {
  return parse_trainer_results(document, source, hybrid_format().step_names());
}

HybridResult gradwire_fixture() {
  return parse_hybrid_result(fixture_json("hybrid_result.json"), "fixture");
}

HybridResult reference_fixture() {
  return parse_hybrid_result(fixture_json("hybrid_result.json").at("reference"), "reference");
}

// The plan of `settings` (no body: nothing trains here).
TrainingPlan plan_of(const HybridSettings& settings) {
  return hybrid_case(nullptr, nullptr).plan(settings);
}

// The document of the fixture: gradwire's side, one repeat, and the embedded reference.
TrainingDocumentInputs fixture_inputs(const HybridSettings& settings) {
  const TrainingPlan plan = plan_of(settings);
  TrainingDocumentInputs inputs;
  inputs.settings = plan.settings;
  inputs.jobs = plan.jobs;
  inputs.sides = {gradwire_fixture()};
  JobResult repeat{gradwire_fixture(), {}};
  repeat.facts.backend = "shm";
  repeat.facts.transports = {"shared memory", "shared memory"};  // trainer 0's, one repeat
  inputs.repeats = {{repeat}};
  inputs.reference = fixture_json("hybrid_result.json").at("reference");
  inputs.reference_repeats = {reference_fixture()};
  inputs.plain_names = plan.plain_names;
  return inputs;
}

TEST(HybridResults, ParsesAndSortsTrainers) {
  const HybridResult result = gradwire_fixture();
  EXPECT_EQ(result.implementation, "gradwire");
  ASSERT_EQ(result.trainers.size(), 2u);
  EXPECT_EQ(result.trainers[0].trainer, 0);
  EXPECT_DOUBLE_EQ(result.trainers[1].mean_examples(), 60.0);
  EXPECT_EQ(result.trainers[0].phase_seconds.at("backward").size(), 4u);
  EXPECT_DOUBLE_EQ(total_examples_per_step(result), 120.0);
  EXPECT_EQ(pooled_seconds(result).size(), 8u);
  // Pooled: .01 .02 .02 .02 .02 .02 .03 .04 -> p50 0.02 s; 120 examples per epoch.
  EXPECT_NEAR(all_p50_examples_per_second(result), 6000.0, 1e-6);
}

TEST(HybridResults, RoundTripsThroughJson) {
  const HybridResult result = gradwire_fixture();
  const nlohmann::json document = {
      {"implementation", "gradwire"},
      {"trainers", trainers_to_json(result, hybrid_format().step_names())}};
  const HybridResult again = parse_hybrid_result(document, "again");
  ASSERT_EQ(again.trainers.size(), 2u);
  EXPECT_EQ(again.trainers[0].seconds, result.trainers[0].seconds);
  EXPECT_EQ(again.trainers[1].examples, result.trainers[1].examples);
  EXPECT_EQ(again.trainers[1].phase_seconds, result.trainers[1].phase_seconds);
}

TEST(HybridResults, RejectsMalformedDocuments) {
  EXPECT_THROW(parse_hybrid_result(nlohmann::json::object(), "x"), InvalidArgument);
  nlohmann::json document = fixture_json("hybrid_result.json");
  document["trainers"][0]["examples_per_epoch"].push_back(1);
  EXPECT_THROW(parse_hybrid_result(document, "x"), InvalidArgument);
  document = fixture_json("hybrid_result.json");
  document["trainers"][0]["epoch_seconds"][0] = "fast";
  EXPECT_THROW(parse_hybrid_result(document, "x"), InvalidArgument);
}

TEST(HybridResults, PoolsRepeatsPerTrainer) {
  const HybridResult once = gradwire_fixture();
  const HybridResult twice = pool_trainer_repeats({once, once});
  EXPECT_EQ(twice.trainers[0].seconds.size(), 8u);
  EXPECT_EQ(twice.trainers[1].phase_seconds.at("lookup").size(), 8u);
  HybridResult fewer = once;
  fewer.trainers.pop_back();
  EXPECT_THROW(pool_trainer_repeats({once, fewer}), InvalidArgument);
  EXPECT_EQ(p50_ratio_by_repeat({once, once}, {reference_fixture(), reference_fixture()}),
            (std::vector<double>{10.0, 10.0}));
}

TEST(HybridReport, RowsInPyTorchDdpRpcBenchmarkLayout) {
  // Trainer 0: .01 .02 .03 .04 s, 60 examples: p50 .025 s = 2400/s, p75 .0325 s = 1846/s,
  // p90 .037 s = 1622/s, p95 .0385 s = 1558/s.
  EXPECT_EQ(trainer_rows(gradwire_fixture(), hybrid_format().columns).front(),
            "Trainer0:  p50:   0.0250s   2400/s  p75:   0.0325s   1846/s  p90:   0.0370s   "
            "1622/s  p95:   0.0385s   1558/s");
  EXPECT_EQ(trainer_rows(gradwire_fixture(), hybrid_format().columns).back(),
            "     All:  p50:   0.0200s   6000/s  p75:   0.0225s   5333/s  p90:   0.0330s   "
            "3636/s  p95:   0.0365s   3288/s");
}

TEST(HybridReport, PrintsTheFixture) {
  std::ostringstream out;
  print_side(out, gradwire_fixture(), "gradwire: DDP + parameter servers", hybrid_format(), 0);
  print_trainer_comparison(out, gradwire_fixture(), reference_fixture(), "gradwire against PyTorch",
                           {10.0, 10.0}, hybrid_format().columns, {"gradwire", "pytorch"});
  EXPECT_EQ(out.str(), read_text_file(fixture("hybrid_table.txt")));
}

TEST(HybridReport, DocumentMatchesTheFixture) {
  HybridSettings settings;
  settings.trainers = 2;
  settings.servers = 2;
  settings.epochs = 4;
  settings.warmup = 1;
  TrainingDocumentInputs inputs = fixture_inputs(settings);
  inputs.metadata.gradwire_version = "0.1.0";
  inputs.metadata.torch_version = "1.13.1";
  inputs.metadata.backend = "shm";
  inputs.metadata.ranks = 2;
  inputs.metadata.cpu_model = "test cpu";
  inputs.metadata.cores = 2;
  inputs.metadata.hostname = "host";
  inputs.metadata.date = "2026-11-23T00:00:00Z";
  inputs.metadata.command = {"gradwire-bench", "hybrid"};
  const nlohmann::json document = training_document(hybrid_format(), inputs);
  EXPECT_EQ(document, fixture_json("hybrid_document.json")) << document.dump(1);
  EXPECT_EQ(document.at("schema_version"), kSchemaVersion);
  EXPECT_EQ(document.at("transport"), "shared memory");
  EXPECT_EQ(document.at("backend"), "shm");
  EXPECT_NEAR(document.at("comparison").at("pytorch").at("pooled").get<double>(), 10.0, 1e-9);
}

// --reference pytorch's plain step (cases/parity.h): named after hybrid's model, in the JSON only
// when measured (the fixture document above has none).
TEST(HybridReport, PlainStepLinesAndDocument) {
  HybridSettings settings;
  settings.batches = 10;
  const PlainStepNames names = plan_of(settings).plain_names;
  PlainStepParity parity;
  parity.gradwire.seconds = {0.0045, 0.0040, 0.0050};
  parity.gradwire.warmup = kHybridPlainWarmup;
  PlainStep theirs;
  theirs.seconds = {0.0064};
  parity.reference = theirs;
  std::ostringstream out;
  print_plain_step_parity(out, parity, names);
  EXPECT_EQ(out.str(),
            "\nplain step (no ps, no ddp: an epoch of 10 batches in one process): gradwire p50 "
            "0.004500s, pytorch p50 0.006400s, 0.703x\n"
            "  they differ by more than 10%: the gradwire/pytorch ratios above include that "
            "difference in plain compute, not only DDP and the parameter servers\n");
  settings.batches = 1;
  EXPECT_EQ(plan_of(settings).plain_names.what,
            "no ps, no ddp: an epoch of 1 batch in one process");

  settings.batches = 10;
  TrainingDocumentInputs inputs = fixture_inputs(settings);
  EXPECT_FALSE(training_document(hybrid_format(), inputs).contains("plain_step"));
  inputs.plain_step = parity;
  const nlohmann::json document = training_document(hybrid_format(), inputs);
  const nlohmann::json& plain = document.at("plain_step");
  EXPECT_EQ(plain.at("what"), names.what);
  EXPECT_EQ(plain.at("gradwire").at("seconds").size(), 3u);
  EXPECT_EQ(plain.at("gradwire").at("warmup"), kHybridPlainWarmup);
  EXPECT_NEAR(plain.at("p50_ratio").get<double>(), 0.0045 / 0.0064, 1e-12);
  EXPECT_EQ(plain.at("differs_by_more_than_10_percent"), true);
}

TEST(HybridReport, HeaderSaysWhatTheRunUsed) {
  HybridSettings settings;
  settings.trainers = 2;
  settings.servers = 2;
  RunUsed used;
  used.jobs = plan_of(settings).jobs;
  JobResult first;
  first.facts.backend = "shm";
  first.facts.transports = {"shared memory", "grpc"};
  used.first = {first};
  std::ostringstream out;
  print_hybrid_header(out, settings, used);
  const std::string text = out.str();
  EXPECT_NE(text.find("* Dense part over shm; parameter-server calls: shared memory to 1 of 2 "
                      "servers, grpc to 1 of 2 servers"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("* Reference"), std::string::npos) << text;
}

TEST(HybridCharts, ThreeChartsWithBothSides) {
  nlohmann::json document = fixture_json("hybrid_document.json");
  const auto charts = charts_from_document(document, "fixture");
  ASSERT_EQ(charts.size(), 3u);
  ASSERT_EQ(charts[0].series.size(), 2u);  // gradwire and pytorch All
  EXPECT_EQ(charts[0].series[0].points.size(), 4u);
  EXPECT_NEAR(charts[0].series[0].points[0].y, 6000.0, 1e-6);
  EXPECT_EQ(charts[1].series.size(), 4u);   // 2 trainers x 2 sides
  EXPECT_EQ(charts[2].series.size(), 10u);  // 6 phases of gradwire, 4 of the reference
  document["trainers"] = 3;
  EXPECT_THROW(charts_from_document(document, "fixture"), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::bench
