#include "cases/ps_report.h"

#include <cstdint>

#include "cases/ddp_report.h"
#include "cases/ps_transports.h"
#include "cases/trainer_report.h"
#include "gradwire/comm/world.h"
#include "gradwire/common/version.h"
#include "harness/rows.h"
#include "harness/stats.h"
#include "harness/table.h"

namespace gradwire::bench {

namespace {

constexpr int kLabelWidth = 9;  // "Trainer0:"

std::string bytes_text(double bytes) {
  return format_bytes(static_cast<std::uint64_t>(bytes > 0 ? bytes + 0.5 : 0.0));
}

void print_ps_bytes(std::ostream& out, const TrainerResults& side, const std::string& title) {
  const Table table({{"", kLabelWidth, Align::kLeft},
                     {"pushed/iter", 13},
                     {"pulled/iter", 13},
                     {"pushed/s", 15},
                     {"pulled/s", 15}});
  auto row = [&](const std::string& label, const ByteRates& rates) {
    return table.row({label + ":", bytes_text(rates.pushed_per_iteration),
                      bytes_text(rates.pulled_per_iteration),
                      bytes_text(rates.pushed_per_second) + "/s",
                      bytes_text(rates.pulled_per_second) + "/s"});
  };
  out << "\n" << title << "\n\n" << table.header() << "\n";
  for (const auto& trainer : side.trainers) {
    out << row("Trainer" + std::to_string(trainer.trainer), byte_rates(trainer)) << "\n";
  }
  out << row("All", total_byte_rates(side)) << "\n" << std::flush;
}

bool counts_bytes(const TrainerResults& side) {
  for (const auto& trainer : side.trainers) {
    if (!trainer.bytes.empty()) return true;
  }
  return false;
}

std::string role_text(const PsSettings& s) {
  const std::string sgd =
      "SGD lr " + format_fixed(kPsLearningRate, 2) + " momentum " + format_fixed(kPsMomentum, 1);
  return s.role == PsRole::kSum
             ? "role sum: the servers average the gradients, each trainer runs " + sgd
             : "role optimizer: the servers run " + sgd;
}

// ours over theirs of the All p50 images/s, pooled and per repeat.
RatioFigures images_ratio(const std::vector<TrainerResults>& ours,
                          const std::vector<TrainerResults>& theirs) {
  RatioFigures figures;
  const double their_rate = all_p50_examples_per_second(pool_trainer_repeats(theirs));
  if (their_rate > 0) {
    figures.pooled = all_p50_examples_per_second(pool_trainer_repeats(ours)) / their_rate;
  }
  figures.by_repeat = p50_ratio_by_repeat(ours, theirs);
  return figures;
}

std::string ratio_text(const RatioFigures& ratio) {
  std::string text = format_fixed(ratio.pooled, 2) + "x";
  if (ratio.by_repeat.size() > 1) {
    text += " (by repeat:";
    for (const double r : ratio.by_repeat) text += " " + format_fixed(r, 2) + "x";
    text += ", median " + format_fixed(percentile(ratio.by_repeat, 50), 2) + "x)";
  }
  return text;
}

nlohmann::json ratio_json(const std::optional<RatioFigures>& ratio) {
  if (!ratio) return nullptr;
  return {{"pooled", ratio->pooled},
          {"by_repeat", ratio->by_repeat},
          {"median", ratio->by_repeat.empty() ? 0.0 : percentile(ratio->by_repeat, 50)}};
}

nlohmann::json passes_json(const TrainerResults& side, int iterations) {
  nlohmann::json passes = nlohmann::json::array();
  for (const auto& pass : pass_figures(side, iterations)) {
    passes.push_back({{"pass", pass.pass},
                      {"elapsed_s", pass.elapsed_s},
                      {"images", pass.images},
                      {"images_per_second", pass.images_per_second()}});
  }
  return passes;
}

// A side's results, summary and passes, as the document embeds them.
nlohmann::json side_json(const TrainerResults& side, const PsSettings& settings) {
  return {{"implementation", side.implementation},
          {"trainers", trainers_to_json(side, ps_step_names())},
          {"summary", {{"all", all_summary(side, ps_step_names())}}},
          {"passes", passes_json(side, settings.iterations)}};
}

nlohmann::json ps_settings_json(const PsSettings& s, const PsThreads& threads) {
  return {{"preset", s.preset},
          {"model", s.model},
          {"trainers", s.trainers},
          {"servers", s.servers},
          {"mode", to_string(s.mode)},
          {"staleness", s.mode.staleness},
          {"role", to_string(s.role)},
          {"batch_size", s.batch_size},
          {"image_size", s.image_size},
          {"num_classes", s.num_classes},
          {"lr", kPsLearningRate},
          {"momentum", kPsMomentum},
          {"warmup", s.warmup},
          {"iterations_per_pass", s.iterations},
          {"passes", s.passes},
          {"seed", s.seed},
          {"overlap_forward", true},
          {"compare", s.compare},
          {"threads", {{"ps", threads.ps}, {"ddp", threads.ddp}, {"local", threads.local}}},
          {"repeat", s.repeat}};
}

}  // namespace

void print_ps_header(std::ostream& out, const PsHeader& header) {
  const PsSettings& s = header.settings;
  print_suite_title(out, "ps (dense parameter servers)", 49, version(), torch_description());
  out << "* Model: " << s.model << ", " << s.num_classes << " classes, " << s.image_size << "x"
      << s.image_size << " synthetic images (one batch per trainer, made before the clock, seed "
      << s.seed << "), cross-entropy\n"
      << "* Trainers: " << s.trainers << " of batch " << s.batch_size
      << ", parameter servers: " << s.servers << " (gradwire-ps-server), "
      << counted(header.threads.ps, "intra-op thread") << " per process\n"
      << "* Parameter-server calls: " << describe_transports(header.transports)
      << " (trainer 0's client after the first run)\n"
      << "* Dense parameters: blocks on the servers (gradwire::ps::DenseModel), " << role_text(s)
      << ", " << to_string(s.mode) << " updates, forward overlapped with the pulls (forward "
      << "pre-hooks)\n"
      << "* Iterations: " << s.warmup << " warm-up, then " << s.passes
      << (s.passes == 1 ? " pass of " : " passes of ") << s.iterations << "\n";
  if (s.compares("ddp")) {
    out << "* Compare: gradwire DDP (backend "
        << (header.ddp_backend.empty() ? std::string("unknown") : header.ddp_backend) << "), "
        << s.trainers << " trainers of " << counted(header.threads.ddp, "thread")
        << ", same model, batch and SGD\n";
  }
  if (s.compares("local")) {
    out << "* Compare: one process without distribution, batch " << s.batch_size << ", "
        << counted(header.threads.local, "thread") << "\n";
  }
  out << "* imgs/s: Pass lines, every trainer's images over the slowest trainer's pass; tables, "
         "images per iteration over a percentile of sec/iter\n";
  if (!header.reference.empty()) out << "* Reference: " << header.reference << "\n";
  out << "\n";
  print_hardware_block(out, header.hardware, 0);
}

std::string describe_ps_layout(const nlohmann::json& layout) {
  if (!layout.is_object()) return "dense layout: unknown";
  std::string servers;
  for (const auto& server : layout.at("servers")) {
    servers += (servers.empty() ? "" : ", ") + bytes_text(server.at("bytes").get<double>());
  }
  return "dense layout: " + std::to_string(layout.at("parameters").get<std::int64_t>()) +
         " tensors, " + std::to_string(layout.at("elements").get<std::int64_t>()) +
         " parameters in " + std::to_string(layout.at("blocks").get<std::int64_t>()) +
         " blocks on " + counted(static_cast<long long>(layout.at("servers").size()), "server") +
         " (" + servers + "), rows of " +
         std::to_string(layout.at("row_width").get<std::int64_t>()) + " (" +
         format_fixed(100.0 * layout.at("padding_fraction").get<double>(), 1) + "% padding), " +
         std::to_string(layout.at("push_messages").get<std::int64_t>()) + " push and " +
         std::to_string(layout.at("pull_messages").get<std::int64_t>()) +
         " pull messages per step" +
         (layout.contains("transport") ? ", " + layout.at("transport").get<std::string>() : "");
}

void print_ps_side(std::ostream& out, const TrainerResults& side, const PsSettings& settings,
                   const std::string& title) {
  out << "\n" << title << "\n\n";
  for (const auto& pass : pass_figures(side, settings.iterations)) out << pass_line(pass) << "\n";
  print_trainer_table(out, side, title + ": per trainer", kDdpRateColumns);
  print_phase_split(out, side, title + ": where an iteration goes (mean ms per iteration)",
                    recorded_phases(side), "iter");
  if (counts_bytes(side)) {
    print_ps_bytes(out, side, title + ": bytes moved (row data and ids, DenseStats)");
  }
}

PlainStepNames ps_plain_step_names(const PsSettings& settings) {
  return {"no ps: the model in one process, batch " + std::to_string(settings.batch_size),
          "the gradwire/pytorch ratios above", "the parameter servers"};
}

PsComparison compare_ps(const std::vector<PsRun>& runs,
                        const std::vector<TrainerResults>& reference) {
  std::vector<TrainerResults> ps, ddp, local;
  for (const auto& run : runs) {
    ps.push_back(run.ps);
    if (run.ddp) ddp.push_back(*run.ddp);
    if (run.local) local.push_back(*run.local);
  }
  PsComparison comparison;
  if (!ddp.empty()) {
    RatioFigures seconds;
    seconds.pooled = p50_seconds_ratio(pool_trainer_repeats(ps), pool_trainer_repeats(ddp));
    for (std::size_t r = 0; r < std::min(ps.size(), ddp.size()); ++r) {
      seconds.by_repeat.push_back(p50_seconds_ratio(ps[r], ddp[r]));
    }
    comparison.ddp_seconds = seconds;
    comparison.ddp_images = images_ratio(ps, ddp);
  }
  if (!local.empty()) comparison.local_images = images_ratio(ps, local);
  if (!reference.empty()) comparison.pytorch_images = images_ratio(ps, reference);
  return comparison;
}

void print_ps_comparisons(std::ostream& out, const PsRun& pooled,
                          const std::optional<TrainerResults>& reference,
                          const PsComparison& comparison, const std::string& pytorch) {
  // Each comparison's ratios by repeat are on its last line (ratio_text), not repeated above.
  if (pooled.ddp && comparison.ddp_seconds && comparison.ddp_images) {
    print_trainer_comparison(out, pooled.ps, *pooled.ddp,
                             "parameter servers against gradwire DDP (allreduce), same model, "
                             "batch and trainers",
                             {}, kDdpRateColumns, {"ps", "allreduce"});
    out << "PS / allreduce: sec/iter p50 " << ratio_text(*comparison.ddp_seconds)
        << " (above 1: the parameter servers are slower); images/s p50 "
        << ratio_text(*comparison.ddp_images) << "\n";
  }
  if (pooled.local && comparison.local_images) {
    print_trainer_comparison(out, pooled.ps, *pooled.local,
                             "the parameter-server job against one process without distribution",
                             {}, kDdpRateColumns, {"ps", "local"});
    out << "PS job / local: images/s p50 " << ratio_text(*comparison.local_images) << "\n";
  }
  if (reference && comparison.pytorch_images) {
    print_trainer_comparison(out, pooled.ps, *reference, "gradwire against " + pytorch, {},
                             kDdpRateColumns, {"gradwire", "pytorch"});
    out << "gradwire / PyTorch: images/s p50 " << ratio_text(*comparison.pytorch_images) << "\n";
  }
  out << std::flush;
}

nlohmann::json ps_document(const PsDocumentInputs& inputs) {
  const PsSettings& settings = inputs.settings;
  nlohmann::json document = make_document("ps", inputs.metadata);
  document["implementation"] = inputs.pooled.ps.implementation;
  document["settings"] = ps_settings_json(settings, inputs.threads);
  document["layout"] = inputs.layout;
  document["transport"] = summarize_transports(inputs.transports);
  document["transports"] = inputs.transports;
  const nlohmann::json ours = side_json(inputs.pooled.ps, settings);
  for (const char* key : {"trainers", "summary", "passes"}) document[key] = ours.at(key);
  const ByteRates bytes = total_byte_rates(inputs.pooled.ps);
  document["summary"]["bytes"] = {{"pushed_per_iteration", bytes.pushed_per_iteration},
                                  {"pulled_per_iteration", bytes.pulled_per_iteration},
                                  {"pushed_per_second", bytes.pushed_per_second},
                                  {"pulled_per_second", bytes.pulled_per_second}};
  RowSet rows{{"implementation", "trainer"}, "s", "trainer", "implementation", {}};
  add_trainer_rows(rows, inputs.pooled.ps);
  nlohmann::json compare = nlohmann::json::object();
  if (inputs.pooled.ddp) {
    compare["ddp"] = side_json(*inputs.pooled.ddp, settings);
    compare["ddp"]["backend"] = summarize_values(inputs.ddp_backends);
    add_trainer_rows(rows, *inputs.pooled.ddp);
  }
  if (inputs.pooled.local) {
    compare["local"] = side_json(*inputs.pooled.local, settings);
    add_trainer_rows(rows, *inputs.pooled.local);
  }
  if (!compare.empty()) document["compare"] = std::move(compare);
  if (inputs.reference) {
    nlohmann::json reference = *inputs.reference;
    const TrainerResults theirs =
        parse_trainer_results(reference, "the PyTorch reference", ps_step_names());
    reference["summary"] = {{"all", all_summary(theirs, ps_step_names())}};
    reference["pass_figures"] = passes_json(theirs, settings.iterations);
    add_trainer_rows(rows, theirs);
    document["reference"] = std::move(reference);
  }
  const PsComparison& c = inputs.comparison;
  nlohmann::json comparison = nlohmann::json::object();
  if (c.ddp_seconds) comparison["ps_over_ddp_p50_sec_per_iteration"] = ratio_json(c.ddp_seconds);
  if (c.ddp_images) comparison["ps_over_ddp_p50_images_per_second"] = ratio_json(c.ddp_images);
  if (c.local_images) {
    comparison["ps_over_local_p50_images_per_second"] = ratio_json(c.local_images);
  }
  if (c.pytorch_images) {
    comparison["gradwire_over_pytorch_p50_images_per_second"] = ratio_json(c.pytorch_images);
  }
  if (!comparison.empty()) document["comparison"] = std::move(comparison);
  if (inputs.plain_step) {
    document["plain_step"] = plain_step_json(*inputs.plain_step, ps_plain_step_names(settings));
  }
  document["rows"] = to_json(rows);
  return document;
}

}  // namespace gradwire::bench
