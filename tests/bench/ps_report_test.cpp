// gradwire-bench ps as a training case (ps_case.h, the generic trainer_report.h): results <-> JSON
// (gradwire's shape and the reference's), the flat gather form, reference 003's Pass lines, bytes
// per second, the tables, the comparisons, the header, the document and its charts, on results
// whose every figure is computable by hand.
#include <gtest/gtest.h>

#include <sstream>

#include "bench_process.h"
#include "cases/ps_case.h"
#include "cases/ps_transports.h"
#include "cases/trainer_report.h"
#include "gradwire/common/error.h"
#include "report/charts.h"

namespace gradwire::bench {
namespace {

using testing::count;

constexpr double kMiB = 1024.0 * 1024.0;

// The phases gradwire's parameter-server trainers record (ps_phases() less the reference's comm).
const std::vector<std::string> kGradwirePhases = {"forward", "backward", "push_wait",
                                                  "server_apply", "pull_wait"};

StepNames ps_step_names() { return ps_format().step_names(); }

TrainerSamples trainer(int index, std::vector<double> seconds) {
  TrainerSamples samples;
  samples.trainer = index;
  samples.examples.assign(seconds.size(), 8);
  for (const auto& phase : kGradwirePhases)
    samples.phase_seconds[phase].assign(seconds.size(), 0.01);
  samples.bytes["pushed"].assign(seconds.size(), kMiB);
  samples.bytes["pulled"].assign(seconds.size(), 2 * kMiB);
  samples.seconds = std::move(seconds);
  return samples;
}

// Trainer 0: .1 .2 .3 .4 s; trainer 1: .2 s each; 8 images per iteration; passes of 2.
TrainerResults ps_result() {
  return {"gradwire", {trainer(0, {0.1, 0.2, 0.3, 0.4}), trainer(1, {0.2, 0.2, 0.2, 0.2})}};
}

TrainerResults comparison_result(const std::string& implementation, int trainers, double seconds) {
  TrainerResults result{implementation, {}};
  for (int t = 0; t < trainers; ++t) {
    TrainerSamples samples;
    samples.trainer = t;
    samples.seconds.assign(4, seconds);
    samples.examples.assign(4, 8);
    samples.phase_seconds["forward"].assign(4, seconds / 2);
    result.trainers.push_back(samples);
  }
  return result;
}

PsSettings settings() {
  PsSettings s;
  s.iterations = 2;
  s.passes = 2;
  s.warmup = 1;
  s.compare = {"ddp", "local"};
  return s;
}

TEST(PsResults, PassLinesInReference003Layout) {
  const auto passes = pass_figures(ps_result(), 2);
  ASSERT_EQ(passes.size(), 2u);
  // Pass 0: trainer 0 took .3 s, trainer 1 .4 s: the job's pass is .4 s for 32 images.
  EXPECT_EQ(pass_line(passes[0]),
            "Pass = 0, Elapsed = 0.40, Training performance = 80.000000 imgs/s");
  // Pass 1: .7 s and .4 s.
  EXPECT_EQ(pass_line(passes[1]),
            "Pass = 1, Elapsed = 0.70, Training performance = 45.714286 imgs/s");
  // Reference 003's own numbers.
  PassFigures paddle;
  paddle.elapsed_s = 41;
  paddle.images = 41 * 146.812973;
  EXPECT_EQ(pass_line(paddle),
            "Pass = 0, Elapsed = 41.00, Training performance = 146.812973 imgs/s");
  EXPECT_EQ(pass_figures(ps_result(), 3).size(), 1u);  // an incomplete pass is left out
  EXPECT_THROW(pass_figures(ps_result(), 0), InvalidArgument);
}

TEST(PsResults, BytesPerIterationAndSecond) {
  const auto first = byte_rates(ps_result().trainers[0]);
  EXPECT_DOUBLE_EQ(first.at("pushed").per_step, kMiB);
  EXPECT_DOUBLE_EQ(first.at("pulled").per_step, 2 * kMiB);
  EXPECT_DOUBLE_EQ(first.at("pushed").per_second, 4 * kMiB);  // 4 MiB in 1.0 s
  const auto all = total_byte_rates(ps_result());
  EXPECT_DOUBLE_EQ(all.at("pushed").per_second, 9 * kMiB);  // and 4 MiB in 0.8 s
  EXPECT_DOUBLE_EQ(all.at("pulled").per_step, 4 * kMiB);
}

TEST(PsResults, RoundTripsThroughJsonAndTheGatherForm) {
  const TrainerResults result = ps_result();
  const nlohmann::json document = {{"implementation", "gradwire"},
                                   {"trainers", trainers_to_json(result, ps_step_names())}};
  EXPECT_TRUE(document["trainers"][0].contains("iteration_seconds"));
  const TrainerResults again = parse_trainer_results(document, "again", ps_step_names());
  ASSERT_EQ(again.trainers.size(), 2u);
  EXPECT_EQ(again.trainers[0].seconds, result.trainers[0].seconds);
  EXPECT_EQ(again.trainers[1].examples, result.trainers[1].examples);
  EXPECT_EQ(again.trainers[1].phase_seconds, result.trainers[1].phase_seconds);
  EXPECT_EQ(again.trainers[0].bytes, result.trainers[0].bytes);

  const SampleRows rows{kGradwirePhases, ps_byte_names()};
  std::vector<double> flat = flatten_samples(result.trainers[0], rows);
  const std::vector<double> second = flatten_samples(result.trainers[1], rows);
  EXPECT_EQ(flat.size(), rows.rows() * 4);
  flat.insert(flat.end(), second.begin(), second.end());
  const TrainerResults gathered = unflatten_samples(flat, 2, rows, "gradwire");
  EXPECT_EQ(gathered.trainers[1].seconds, result.trainers[1].seconds);
  EXPECT_EQ(gathered.trainers[0].bytes, result.trainers[0].bytes);
  EXPECT_EQ(gathered.trainers[0].phase_seconds, result.trainers[0].phase_seconds);
  EXPECT_THROW(unflatten_samples({1.0, 2.0, 3.0}, 2, rows, "x"), InvalidArgument);
}

TEST(PsResults, StepsTheAlternatingTimelineRecordedAndDidNot) {
  TrainerResults result = ps_result();  // 4 steps a trainer
  result.trainers[0].timeline_recorded = {1, 0, -1, 1};
  result.trainers[1].timeline_recorded = {0, 0, 1, -1};
  const AlternatedSteps steps = alternated_steps(result);
  EXPECT_EQ(steps.recorded_seconds,
            (std::vector<double>{result.trainers[0].seconds[0], result.trainers[0].seconds[3],
                                 result.trainers[1].seconds[2]}));
  EXPECT_EQ(steps.unrecorded_seconds,
            (std::vector<double>{result.trainers[0].seconds[1], result.trainers[1].seconds[0],
                                 result.trainers[1].seconds[1]}));

  // Through JSON and the gather's flat form, as the trainers hand them over.
  const nlohmann::json document = {{"implementation", "gradwire"},
                                   {"trainers", trainers_to_json(result, ps_step_names())}};
  const TrainerResults again = parse_trainer_results(document, "again", ps_step_names());
  EXPECT_EQ(again.trainers[1].timeline_recorded, result.trainers[1].timeline_recorded);
  nlohmann::json short_list = document;
  short_list["trainers"][0]["timeline_recorded"] = {1, 0};
  EXPECT_THROW(parse_trainer_results(short_list, "short", ps_step_names()), InvalidArgument);

  const SampleRows rows{kGradwirePhases, ps_byte_names(), true};
  std::vector<double> flat = flatten_samples(result.trainers[0], rows);
  const std::vector<double> second = flatten_samples(result.trainers[1], rows);
  flat.insert(flat.end(), second.begin(), second.end());
  const TrainerResults gathered = unflatten_samples(flat, 2, rows, "gradwire");
  EXPECT_EQ(gathered.trainers[0].timeline_recorded, result.trainers[0].timeline_recorded);
  EXPECT_EQ(gathered.trainers[1].timeline_recorded, result.trainers[1].timeline_recorded);
  EXPECT_EQ(gathered.trainers[1].bytes, result.trainers[1].bytes);
  // Without the row, no steps are told apart.
  EXPECT_TRUE(alternated_steps(ps_result()).recorded_seconds.empty());
}

// What a job's trainer 0 hands the conductor (training_case.h): every trainer's samples and what
// it used, through the result file's JSON.
TEST(PsResults, JobResultRoundTripsThroughItsFile) {
  JobResult result{ps_result(), {}};
  result.facts.backend = "shared memory";
  result.facts.transports = {"shared memory", "grpc"};
  result.facts.details = {{"blocks", 2}};
  result.facts.text = "layout";
  const JobResult again =
      parse_job_result(to_json(result, ps_step_names()), "file", ps_step_names());
  EXPECT_EQ(again.results.implementation, "gradwire");
  EXPECT_EQ(again.results.trainers[1].seconds, result.results.trainers[1].seconds);
  EXPECT_EQ(again.results.trainers[0].bytes, result.results.trainers[0].bytes);
  EXPECT_EQ(again.facts.backend, "shared memory");
  EXPECT_EQ(again.facts.transports, result.facts.transports);
  EXPECT_EQ(again.facts.details, result.facts.details);
  EXPECT_EQ(again.facts.text, "layout");
  EXPECT_THROW(parse_job_result({{"implementation", "x"}}, "file", ps_step_names()),
               InvalidArgument);
}

TEST(PsResults, ReadsTheReferencesShape) {
  // ps_reference.py: one example count for every iteration, phases forward, backward and comm.
  const nlohmann::json document = nlohmann::json::parse(R"({
    "implementation": "pytorch", "passes": 2,
    "trainers": [{"trainer": 1, "iteration_seconds": [0.5, 0.5], "examples_per_iteration": 8,
                  "phase_seconds": {"forward": [0.1, 0.1], "backward": [0.2, 0.2],
                                    "comm": [0.2, 0.2]}},
                 {"trainer": 0, "iteration_seconds": [0.5, 0.5], "examples_per_iteration": 8,
                  "phase_seconds": {"forward": [0.1, 0.1], "backward": [0.2, 0.2],
                                    "comm": [0.2, 0.2]}}]})");
  const TrainerResults reference = parse_trainer_results(document, "reference", ps_step_names());
  EXPECT_EQ(reference.trainers[0].trainer, 0);
  EXPECT_EQ(reference.trainers[0].examples, (std::vector<std::int64_t>{8, 8}));
  EXPECT_EQ(recorded_phases(reference, ps_phases()),
            (std::vector<std::string>{"forward", "backward", "comm"}));
  EXPECT_EQ(recorded_phases(ps_result(), ps_phases()), kGradwirePhases);
  nlohmann::json bad = document;
  bad["trainers"][0]["examples_per_iteration"] = {8};
  EXPECT_THROW(parse_trainer_results(bad, "bad", ps_step_names()), InvalidArgument);
  bad = document;
  bad["trainers"][0].erase("iteration_seconds");
  EXPECT_THROW(parse_trainer_results(bad, "bad", ps_step_names()), InvalidArgument);
}

TEST(PsReport, PrintsPassLinesTableAndSplit) {
  std::ostringstream out;
  print_side(out, ps_result(), "gradwire: dense parameter servers", ps_format(), 2);
  const std::string text = out.str();
  EXPECT_NE(text.find("\nPass = 0, Elapsed = 0.40, Training performance = 80.000000 imgs/s\n"
                      "Pass = 1, Elapsed = 0.70, Training performance = 45.714286 imgs/s\n"),
            std::string::npos)
      << text;
  // Trainer 0: p50 .25 s for 8 images = 32/s; All: p50 .2 s for 16 images = 80/s.
  EXPECT_NE(text.find("Trainer0:  p50:   0.2500s    32.0/s"), std::string::npos) << text;
  EXPECT_NE(text.find("     All:  p50:   0.2000s    80.0/s"), std::string::npos) << text;
  EXPECT_NE(text.find("forward ms        backward ms       push_wait ms    server_apply ms       "
                      "pull_wait ms           other ms"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Trainer1:      200.00         10.00 (5%)"), std::string::npos) << text;
  EXPECT_NE(text.find("             pulled/iter    pushed/iter         pulled/s         pushed/s"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Trainer0:          2 MiB          1 MiB          8 MiB/s          4 MiB/s"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("All:               4 MiB          2 MiB         18 MiB/s          9 MiB/s"),
            std::string::npos)
      << text;
}

// The plan of `s` (no bodies: nothing trains here).
TrainingPlan plan_of(const PsSettings& s) { return ps_case(nullptr, nullptr).plan(s); }

// Two repeats of every side: the parameter servers, DDP, one local process and PyTorch's.
TrainingDocumentInputs two_repeats() {
  const TrainingPlan plan = plan_of(settings());
  TrainingDocumentInputs inputs;
  inputs.metadata.command = {"gradwire-bench", "ps"};
  inputs.settings = plan.settings;
  inputs.steps_per_pass = plan.steps_per_pass;
  inputs.jobs = plan.jobs;
  const std::vector<TrainerResults> sides = {ps_result(), comparison_result("gradwire-ddp", 2, 0.1),
                                             comparison_result("local", 1, 0.05)};
  for (const auto& side : sides) {
    inputs.sides.push_back(pool_trainer_repeats({side, side}));
    inputs.repeats.push_back({{side, {}}, {side, {}}});
  }
  inputs.repeats[0][0].facts.transports = {"shared memory"};
  inputs.repeats[0][1].facts.transports = {"grpc"};  // a channel given up in repeat 2
  inputs.repeats[0][0].facts.details = {
      {"parameters", 2},
      {"elements", 10},
      {"blocks", 2},
      {"push_messages", 1},
      {"pull_messages", 1},
      {"row_width", 8},
      {"num_rows", 4},
      {"padding_fraction", 0.375},
      {"servers", {{{"elements", 5}, {"bytes", 64}, {"blocks", 1}}}}};
  for (auto& repeat : inputs.repeats[1]) repeat.facts.backend = "shm";
  const TrainerResults reference = comparison_result("pytorch", 2, 0.4);
  inputs.reference = nlohmann::json{{"implementation", "pytorch"},
                                    {"passes", 2},
                                    {"trainers", trainers_to_json(reference, ps_step_names())}};
  inputs.reference_repeats = {reference, reference};
  inputs.plain_names = plan.plain_names;
  return inputs;
}

TEST(PsReport, ComparesWithDdpLocalAndThePyTorchReference) {
  const TrainingDocumentInputs inputs = two_repeats();
  const nlohmann::json comparison = training_document(ps_format(), inputs).at("comparison");
  // PS p50 .2 s for 16 images (80/s) against DDP's .1 s (160/s), the local process's .05 s for 8
  // images (160/s) and PyTorch's .4 s (40/s).
  EXPECT_DOUBLE_EQ(comparison.at("gradwire-ddp").at("pooled").get<double>(), 0.5);
  EXPECT_EQ(comparison.at("gradwire-ddp").at("by_repeat"), nlohmann::json({0.5, 0.5}));
  EXPECT_DOUBLE_EQ(comparison.at("local").at("pooled").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(comparison.at("pytorch").at("median").get<double>(), 2.0);

  std::ostringstream out;
  print_trainer_comparison(out, inputs.sides[0], inputs.sides[1], "ps against ddp", {0.5, 0.5},
                           ps_format().columns, {"gradwire", "gradwire-ddp"});
  const std::string text = out.str();
  EXPECT_EQ(count(text, "gradwire/gradwire-ddp ex/s: p50: 0.50x"), 1u) << text;
  EXPECT_EQ(count(text, "p50 ratio by repeat: 0.50x 0.50x, median 0.50x"), 1u) << text;
}

// --reference pytorch's plain step (cases/parity.h): named after ps's batch, in the JSON only
// when measured.
TEST(PsReport, PlainStepLinesAndDocument) {
  const PlainStepNames names = plan_of(settings()).plain_names;
  PlainStepParity parity;
  parity.gradwire.seconds = {0.0304, 0.0300, 0.0310};
  PlainStep theirs;
  theirs.seconds = {0.0312, 0.0320};
  parity.reference = theirs;
  std::ostringstream out;
  print_plain_step_parity(out, parity, names);
  EXPECT_EQ(out.str(), "\nplain step (no ps: the model in one process, batch " +
                           std::to_string(settings().batch_size) +
                           "): gradwire p50 0.0304s, pytorch p50 0.0316s, 0.962x\n")
      << "within 10%: no warning";

  TrainingDocumentInputs inputs = two_repeats();
  EXPECT_FALSE(training_document(ps_format(), inputs).contains("plain_step"));
  inputs.plain_step = parity;
  const nlohmann::json plain = training_document(ps_format(), inputs).at("plain_step");
  EXPECT_EQ(plain.at("what"), names.what);
  EXPECT_EQ(plain.at("pytorch").at("seconds").size(), 2u);
  EXPECT_NEAR(plain.at("p50_ratio").get<double>(), 0.0304 / 0.0316, 1e-12);
  EXPECT_EQ(plain.at("differs_by_more_than_10_percent"), false);
}

TEST(PsReport, DocumentAndCharts) {
  const TrainingDocumentInputs inputs = two_repeats();
  const nlohmann::json document = training_document(ps_format(), inputs);
  EXPECT_EQ(document.at("schema_version"), kSchemaVersion);
  EXPECT_EQ(document.at("transport"), "mixed");
  EXPECT_EQ(document.at("transports"), nlohmann::json::parse(R"([["shared memory"], ["grpc"]])"));
  EXPECT_EQ(document.at("compare").at("ddp").at("backend"), "shm");
  EXPECT_EQ(document.at("benchmark"), "ps");
  EXPECT_EQ(document.at("implementation"), "gradwire");
  EXPECT_EQ(document.at("step"), "iteration");
  EXPECT_EQ(document.at("steps_per_pass"), 2);
  EXPECT_EQ(document.at("settings").at("mode"), "sync");
  EXPECT_EQ(document.at("settings").at("iterations_per_pass"), 2);
  EXPECT_EQ(document.at("passes").size(), 4u);  // 2 repeats of 2 passes, pooled
  EXPECT_DOUBLE_EQ(document.at("passes")[0].at("images_per_second").get<double>(), 80.0);
  EXPECT_DOUBLE_EQ(document.at("summary").at("all").at("p50_sec_per_iteration").get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(document.at("summary").at("bytes").at("pushed_per_second").get<double>(),
                   9 * kMiB);
  EXPECT_EQ(document.at("compare").at("ddp").at("implementation"), "gradwire-ddp");
  EXPECT_EQ(document.at("compare").at("local").at("trainers").size(), 1u);
  EXPECT_EQ(document.at("reference").at("passes").size(), 2u);  // 4 iterations: 2 passes
  EXPECT_EQ(document.at("rows").at("entries").size(), 7u);      // 2 + 2 + 1 + 2 trainers
  EXPECT_EQ(describe_ps_layout(document.at("details")),
            "dense layout: 2 tensors, 10 parameters in 2 blocks on 1 server (64 B), rows of 8 "
            "(37.5% padding), 1 push and 1 pull messages per step");

  // report: imgs/s by pass, then ex/s, sec/iter by iteration and phases of every side.
  const auto charts = charts_from_document(document, "doc.json");
  ASSERT_EQ(charts.size(), 4u);
  EXPECT_EQ(charts[0].title, "imgs/s by pass");
  EXPECT_EQ(charts[0].series.size(), 4u);  // gradwire, gradwire-ddp, local, pytorch
  EXPECT_NEAR(charts[0].series[0].points[0].y, 80.0, 1e-9);
  EXPECT_EQ(charts[2].title, "sec/iter by iteration");
  EXPECT_EQ(charts[2].series.size(), 7u);
  nlohmann::json broken = document;
  broken["step"] = 7;
  EXPECT_THROW(charts_from_document(broken, "broken.json"), InvalidArgument);
}

// What a run reports of its transports (cases/ps_transports.h), and the header that prints them.
TEST(PsTransports, SummariesAndLines) {
  EXPECT_EQ(summarize_transports({{"shared memory", "shared memory"}, {"shared memory"}}),
            "shared memory");
  EXPECT_EQ(summarize_transports({{"grpc"}}), "grpc");
  EXPECT_EQ(summarize_transports({{"shared memory", "grpc"}}), kMixedTransports);
  EXPECT_EQ(summarize_transports({{"grpc"}, {"shared memory"}}), kMixedTransports);
  EXPECT_EQ(summarize_transports({}), "none");
  EXPECT_EQ(summarize_values({"shm", "shm"}), "shm");
  EXPECT_EQ(summarize_values({"shm", "gloo"}), kMixedTransports);
  EXPECT_EQ(describe_transports({"shared memory", "shared memory"}),
            "shared memory to 2 of 2 servers");
  EXPECT_EQ(describe_transports({"grpc", "shared memory", "grpc"}),
            "grpc to 2 of 3 servers, shared memory to 1 of 3 servers");
  EXPECT_EQ(describe_transports({}), "no servers");

  struct FakeClient {
    int num_servers() const { return 2; }
    std::string transport(int server) const { return server == 0 ? "shared memory" : "grpc"; }
  };
  EXPECT_EQ(client_transports(FakeClient{}), (std::vector<std::string>{"shared memory", "grpc"}));
}

TEST(PsReport, HeaderSaysWhatTheRunUsed) {
  PsSettings s = settings();
  s.servers = 2;
  RunUsed used;
  used.jobs = plan_of(s).jobs;
  used.first.resize(used.jobs.size());
  used.first[0].facts.transports = {"shared memory", "shared memory"};
  used.first[1].facts.backend = "shm";
  std::ostringstream out;
  print_ps_header(out, s, used);
  const std::string text = out.str();
  EXPECT_NE(text.find("parameter servers: 2 (gradwire-ps-server), "), std::string::npos) << text;
  EXPECT_NE(text.find("* Parameter-server calls: shared memory to 2 of 2 servers (trainer 0's "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("* Compare: gradwire DDP (allreduce) over shm, "), std::string::npos) << text;
  EXPECT_NE(text.find("* Compare: one process without distribution, 1 trainer of "),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("gRPC"), std::string::npos) << text;
}

}  // namespace
}  // namespace gradwire::bench
