// gradwire-bench ps: results <-> JSON (gradwire's shape and the reference's), the flat gather
// form, reference 003's Pass lines, bytes per second, the tables, the comparisons, the document
// and its charts, on results whose every figure is computable by hand.
#include "cases/ps_report.h"

#include <gtest/gtest.h>

#include <sstream>

#include "bench_process.h"
#include "cases/ps_results.h"
#include "cases/ps_transports.h"
#include "gradwire/common/error.h"
#include "report/charts.h"

namespace gradwire::bench {
namespace {

using testing::count;

constexpr double kMiB = 1024.0 * 1024.0;

TrainerSamples trainer(int index, std::vector<double> seconds) {
  TrainerSamples samples;
  samples.trainer = index;
  samples.examples.assign(seconds.size(), 8);
  for (const auto& phase : ps_phases()) samples.phase_seconds[phase].assign(seconds.size(), 0.01);
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
  const ByteRates first = byte_rates(ps_result().trainers[0]);
  EXPECT_DOUBLE_EQ(first.pushed_per_iteration, kMiB);
  EXPECT_DOUBLE_EQ(first.pulled_per_iteration, 2 * kMiB);
  EXPECT_DOUBLE_EQ(first.pushed_per_second, 4 * kMiB);  // 4 MiB in 1.0 s
  const ByteRates all = total_byte_rates(ps_result());
  EXPECT_DOUBLE_EQ(all.pushed_per_second, 9 * kMiB);  // and 4 MiB in 0.8 s
  EXPECT_DOUBLE_EQ(all.pulled_per_iteration, 4 * kMiB);
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

  const SampleRows rows{ps_phases(), ps_byte_names()};
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
  EXPECT_EQ(recorded_phases(reference), (std::vector<std::string>{"forward", "backward", "comm"}));
  EXPECT_EQ(recorded_phases(ps_result()), ps_phases());
  nlohmann::json bad = document;
  bad["trainers"][0]["examples_per_iteration"] = {8};
  EXPECT_THROW(parse_trainer_results(bad, "bad", ps_step_names()), InvalidArgument);
  bad = document;
  bad["trainers"][0].erase("iteration_seconds");
  EXPECT_THROW(parse_trainer_results(bad, "bad", ps_step_names()), InvalidArgument);
}

TEST(PsReport, PrintsPassLinesTableAndSplit) {
  std::ostringstream out;
  print_ps_side(out, ps_result(), settings(), "gradwire: dense parameter servers");
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
  EXPECT_NE(text.find("Trainer0:          1 MiB          2 MiB          4 MiB/s          8 MiB/s"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("All:               2 MiB          4 MiB          9 MiB/s         18 MiB/s"),
            std::string::npos)
      << text;
}

TEST(PsReport, ComparesWithDdpLocalAndThePyTorchReference) {
  PsRun run{ps_result(), comparison_result("gradwire-ddp", 2, 0.1),
            comparison_result("local", 1, 0.05)};
  const TrainerResults reference = comparison_result("pytorch", 2, 0.4);
  const PsComparison comparison = compare_ps({run, run}, {reference, reference});
  // PS p50 .2 s against DDP's .1 s; 80 images/s against 160; the local process 160/s; PyTorch's
  // 40/s.
  ASSERT_TRUE(comparison.ddp_seconds && comparison.ddp_images && comparison.local_images &&
              comparison.pytorch_images);
  EXPECT_DOUBLE_EQ(comparison.ddp_seconds->pooled, 2.0);
  EXPECT_EQ(comparison.ddp_seconds->by_repeat, (std::vector<double>{2.0, 2.0}));
  EXPECT_DOUBLE_EQ(comparison.ddp_images->pooled, 0.5);
  EXPECT_DOUBLE_EQ(comparison.local_images->pooled, 0.5);
  EXPECT_DOUBLE_EQ(comparison.pytorch_images->pooled, 2.0);
  EXPECT_FALSE(compare_ps({PsRun{ps_result(), std::nullopt, std::nullopt}}, {}).ddp_seconds);

  std::ostringstream out;
  print_ps_comparisons(out, pool_ps_runs({run, run}), pool_trainer_repeats({reference, reference}),
                       comparison, "PyTorch RPC");
  const std::string text = out.str();
  EXPECT_EQ(count(text,
                  "PS / allreduce: sec/iter p50 2.00x (by repeat: 2.00x 2.00x, median "
                  "2.00x) (above 1: the parameter servers are slower); images/s p50 0.50x"),
            1u)
      << text;
  EXPECT_EQ(count(text, "ps/allreduce ex/s: p50: 0.50x"), 1u) << text;
  EXPECT_EQ(count(text, "PS job / local: images/s p50 0.50x"), 1u) << text;
  EXPECT_EQ(count(text, "gradwire / PyTorch: images/s p50 2.00x"), 1u) << text;
  EXPECT_EQ(count(text, "gradwire/pytorch ex/s: p50: 2.00x"), 1u) << text;
}

// --reference pytorch's plain step (cases/parity.h): named after ps's batch, in the JSON only
// when measured.
TEST(PsReport, PlainStepLinesAndDocument) {
  const PlainStepNames names = ps_plain_step_names(settings());
  PlainStepParity parity;
  parity.gradwire.seconds = {0.0304, 0.0300, 0.0310};
  PlainStep theirs;
  theirs.seconds = {0.0312, 0.0320};
  parity.reference = theirs;
  std::ostringstream out;
  print_plain_step_parity(out, parity, names);
  EXPECT_EQ(out.str(),
            "\nplain step (no ps: the model in one process, batch " +
                std::to_string(settings().batch_size) +
                "): gradwire p50 0.0304s, pytorch p50 0.0316s, 0.962x\n")
      << "within 10%: no warning";

  PsDocumentInputs inputs;
  inputs.settings = settings();
  inputs.pooled = PsRun{ps_result(), std::nullopt, std::nullopt};
  EXPECT_FALSE(ps_document(inputs).contains("plain_step"));
  inputs.plain_step = parity;
  const nlohmann::json plain = ps_document(inputs).at("plain_step");
  EXPECT_EQ(plain.at("what"), names.what);
  EXPECT_EQ(plain.at("pytorch").at("seconds").size(), 2u);
  EXPECT_NEAR(plain.at("p50_ratio").get<double>(), 0.0304 / 0.0316, 1e-12);
  EXPECT_EQ(plain.at("differs_by_more_than_10_percent"), false);
}

TEST(PsReport, DocumentAndCharts) {
  PsDocumentInputs inputs;
  inputs.metadata.command = {"gradwire-bench", "ps"};
  inputs.settings = settings();
  const PsRun run{ps_result(), comparison_result("gradwire-ddp", 2, 0.1),
                  comparison_result("local", 1, 0.05)};
  inputs.pooled = run;
  inputs.layout = {{"parameters", 2},
                   {"elements", 10},
                   {"blocks", 2},
                   {"push_messages", 1},
                   {"pull_messages", 1},
                   {"row_width", 8},
                   {"num_rows", 4},
                   {"padding_fraction", 0.375},
                   {"servers", {{{"elements", 5}, {"bytes", 64}, {"blocks", 1}}}}};
  inputs.reference = nlohmann::json{
      {"implementation", "pytorch"},
      {"passes", 2},
      {"trainers", trainers_to_json(comparison_result("pytorch", 2, 0.4), ps_step_names())}};
  inputs.comparison = compare_ps({run}, {comparison_result("pytorch", 2, 0.4)});
  inputs.transports = {{"shared memory"}, {"grpc"}};  // a channel given up in repeat 2
  inputs.ddp_backends = {"shm", "shm"};
  const nlohmann::json document = ps_document(inputs);
  EXPECT_EQ(document.at("schema_version"), 1);
  EXPECT_EQ(document.at("transport"), "mixed");
  EXPECT_EQ(document.at("transports"), nlohmann::json::parse(R"([["shared memory"], ["grpc"]])"));
  EXPECT_EQ(document.at("compare").at("ddp").at("backend"), "shm");
  EXPECT_EQ(document.at("benchmark"), "ps");
  EXPECT_EQ(document.at("implementation"), "gradwire");
  EXPECT_EQ(document.at("settings").at("mode"), "sync");
  EXPECT_EQ(document.at("settings").at("iterations_per_pass"), 2);
  EXPECT_EQ(document.at("passes").size(), 2u);
  EXPECT_DOUBLE_EQ(document.at("passes")[0].at("images_per_second").get<double>(), 80.0);
  EXPECT_DOUBLE_EQ(document.at("summary").at("all").at("p50_sec_per_iteration").get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(document.at("summary").at("bytes").at("pushed_per_second").get<double>(),
                   9 * kMiB);
  EXPECT_EQ(document.at("compare").at("ddp").at("implementation"), "gradwire-ddp");
  EXPECT_EQ(document.at("compare").at("local").at("trainers").size(), 1u);
  EXPECT_DOUBLE_EQ(
      document.at("comparison").at("ps_over_ddp_p50_sec_per_iteration").at("pooled").get<double>(),
      2.0);
  EXPECT_DOUBLE_EQ(document.at("comparison")
                       .at("gradwire_over_pytorch_p50_images_per_second")
                       .at("median")
                       .get<double>(),
                   2.0);
  EXPECT_EQ(document.at("reference").at("pass_figures").size(), 2u);
  EXPECT_EQ(document.at("rows").at("entries").size(), 7u);  // 2 + 2 + 1 + 2 trainers
  EXPECT_EQ(describe_ps_layout(inputs.layout),
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
  broken.erase("settings");
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
  PsHeader header;
  header.settings = settings();
  header.settings.servers = 2;
  header.transports = {"shared memory", "shared memory"};
  header.ddp_backend = "shm";
  std::ostringstream out;
  print_ps_header(out, header);
  const std::string text = out.str();
  EXPECT_NE(text.find("parameter servers: 2 (gradwire-ps-server), "), std::string::npos) << text;
  EXPECT_NE(text.find("* Parameter-server calls: shared memory to 2 of 2 servers (trainer 0's "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("* Compare: gradwire DDP (backend shm), "), std::string::npos) << text;
  EXPECT_EQ(text.find("gRPC"), std::string::npos) << text;
}

}  // namespace
}  // namespace gradwire::bench
