#include "cases/hybrid_report.h"

#include "cases/ps_transports.h"
#include "gradwire/comm/world.h"
#include "gradwire/common/version.h"
#include "harness/rows.h"

namespace gradwire::bench {

void print_hybrid_header(std::ostream& out, const HybridSettings& s, const std::string& reference,
                         const HardwareInfo& hardware) {
  print_suite_title(out, "hybrid (DDP + parameter servers)", 49, version(), torch_description());
  out << "* Distributed backend: " << s.backend
      << " (dense part); the parameter-server calls' transport is printed with each run, as "
         "trainer 0's client found it\n"
      << "* Trainers: " << s.trainers << ", parameter servers: " << s.servers
      << ", one intra-op thread per trainer\n"
      << "* Embedding: " << s.rows << " rows x " << s.embedding_width() << " (" << s.servers
      << " x " << s.dim << "), bag sum, sharded by id; SGD lr " << kHybridLearningRate << ", "
      << to_string(s.mode) << " updates\n"
      << "* Dense: DDP(Linear(" << s.embedding_width()
      << ", 256), Linear(256, 128), ReLU, Linear(128, 64), Linear(64, 32), Linear(32, 8)), "
         "cross-entropy, SGD lr "
      << kHybridLearningRate << "\n"
      << "* Epochs: " << s.warmup << " warm-up + " << s.epochs << " measured of " << s.batches
      << " batches (20-50 ids, bags of 1-10, seed " << s.seed << ")\n"
      << "* ex/sec: examples per epoch (mean over measured epochs) / sec/epoch\n";
  if (!reference.empty()) out << "* Reference: " << reference << "\n";
  out << "\n";
  print_hardware_block(out, hardware, 0);
}

const RateColumns& hybrid_rate_columns() {
  static const RateColumns kColumns{"sec/epoch", 8, 0, nullptr};
  return kColumns;
}

void print_hybrid_table(std::ostream& out, const HybridResult& result, const std::string& title) {
  print_trainer_table(out, result, title, hybrid_rate_columns());
}

void print_hybrid_phases(std::ostream& out, const HybridResult& result, const std::string& title) {
  print_phase_split(out, result, title, hybrid_phases(), "epoch");
}

void print_hybrid_comparison(std::ostream& out, const HybridResult& gradwire,
                             const HybridResult& reference, const std::string& title,
                             const std::vector<double>& ratio_by_repeat) {
  print_trainer_comparison(out, gradwire, reference, title, ratio_by_repeat, hybrid_rate_columns(),
                           {"gradwire", "pytorch"});
}

PlainStepNames hybrid_plain_step_names(const HybridSettings& settings) {
  const std::string batches =
      std::to_string(settings.batches) + (settings.batches == 1 ? " batch" : " batches");
  return {"no ps, no ddp: an epoch of " + batches + " in one process",
          "the gradwire/pytorch ratios above", "DDP and the parameter servers"};
}

namespace {

nlohmann::json hybrid_settings_json(const HybridSettings& s) {
  return {{"preset", s.preset},
          {"trainers", s.trainers},
          {"servers", s.servers},
          {"rows", s.rows},
          {"dim", s.dim},
          {"embedding_width", s.embedding_width()},
          {"epochs", s.epochs},
          {"warmup", s.warmup},
          {"batches_per_epoch", s.batches},
          {"seed", s.seed},
          {"lr", kHybridLearningRate},
          {"mode", to_string(s.mode)},
          {"server_threads", s.server_threads},
          {"defer_pushes", s.defer_pushes},
          {"backend", s.backend},
          {"repeat", s.repeat}};
}

}  // namespace

nlohmann::json hybrid_document(const HybridDocumentInputs& inputs) {
  nlohmann::json document = make_document("hybrid", inputs.metadata);
  document["implementation"] = "gradwire";
  document["settings"] = hybrid_settings_json(inputs.settings);
  document["transport"] = summarize_transports(inputs.transports);
  document["transports"] = inputs.transports;
  document["trainers"] = trainers_to_json(inputs.gradwire, hybrid_step_names());
  document["summary"] = {{"all", all_summary(inputs.gradwire, hybrid_step_names())}};
  RowSet rows{{"implementation", "trainer"}, "s", "trainer", "implementation", {}};
  add_trainer_rows(rows, inputs.gradwire);
  if (inputs.reference) {
    nlohmann::json reference = *inputs.reference;
    const HybridResult theirs = parse_hybrid_result(reference, "the PyTorch reference");
    add_trainer_rows(rows, theirs);
    reference["summary"] = {{"all", all_summary(theirs, hybrid_step_names())}};
    const double their_p50 = all_p50_examples_per_second(theirs);
    document["comparison"] = {
        {"all_p50_ex_s_ratio",
         their_p50 > 0 ? all_p50_examples_per_second(inputs.gradwire) / their_p50 : 0.0},
        {"ratio_by_repeat", inputs.ratio_by_repeat}};
    document["reference"] = std::move(reference);
  }
  if (inputs.plain_step) {
    document["plain_step"] =
        plain_step_json(*inputs.plain_step, hybrid_plain_step_names(inputs.settings));
  }
  document["rows"] = to_json(rows);
  return document;
}

}  // namespace gradwire::bench
