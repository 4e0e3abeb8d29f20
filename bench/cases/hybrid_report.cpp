#include "cases/hybrid_report.h"

#include <cstdio>
#include <optional>

#include "gradwire/comm/world.h"
#include "gradwire/common/version.h"
#include "harness/rows.h"
#include "harness/stats.h"
#include "harness/table.h"

namespace gradwire::bench {

namespace {

constexpr int kLabelWidth = 8;  // PyTorch's DDP + RPC benchmark: "%8s:"
const RateColumns kRateColumns{"sec/epoch", 8, 0, nullptr};

std::string trainer_label(int trainer) { return "Trainer" + std::to_string(trainer); }

double mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (const double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

// Mean ms per epoch of each phase (nullopt: the side does not record it), then the epoch.
struct PhaseMeans {
  std::vector<std::optional<double>> phase_ms;
  double epoch_ms = 0;
};

PhaseMeans phase_means(const HybridTrainerResult& trainer) {
  PhaseMeans means;
  means.epoch_ms = mean(trainer.epoch_seconds) * 1e3;
  for (const auto& phase : hybrid_phases()) {
    const auto found = trainer.phase_seconds.find(phase);
    if (found == trainer.phase_seconds.end() || found->second.empty()) {
      means.phase_ms.push_back(std::nullopt);
    } else {
      means.phase_ms.push_back(mean(found->second) * 1e3);
    }
  }
  return means;
}

std::string share_cell(double ms, double epoch_ms) {
  const double share = epoch_ms > 0 ? 100.0 * ms / epoch_ms : 0.0;
  return format_fixed(ms, 2) + " (" + format_fixed(share, 0) + "%)";
}

Table phase_table() {
  std::vector<Column> columns = {{"", kLabelWidth + 1, Align::kLeft}, {"epoch ms", 10}};
  for (const auto& phase : hybrid_phases()) columns.push_back({phase + " ms", 17});
  columns.push_back({"other ms", 17});
  return Table(columns);
}

std::string phase_row(const Table& table, const std::string& label, const PhaseMeans& means) {
  std::vector<std::string> cells = {label + ":", format_fixed(means.epoch_ms, 2)};
  double covered = 0;
  for (const auto& ms : means.phase_ms) {
    cells.push_back(ms ? share_cell(*ms, means.epoch_ms) : "n/a");
    covered += ms.value_or(0.0);
  }
  cells.push_back(share_cell(means.epoch_ms - covered, means.epoch_ms));
  return table.row(cells);
}

nlohmann::json all_summary(const HybridResult& result) {
  nlohmann::json summary = nlohmann::json::object();
  const std::vector<double> seconds = pooled_epoch_seconds(result);
  if (seconds.empty()) return summary;
  summary["examples_per_epoch"] = total_examples_per_epoch(result);
  for (const auto& row :
       rate_percentiles(seconds, total_examples_per_epoch(result), training_percentiles())) {
    const std::string p = "p" + std::to_string(row.percentile);
    summary[p + "_sec_per_epoch"] = row.seconds;
    summary[p + "_ex_per_sec"] = row.examples_per_second;
  }
  return summary;
}

// The column headers above hybrid_row lines.
std::string hybrid_table_header() {
  return std::string(static_cast<std::size_t>(kLabelWidth + 1), ' ') +
         kRateColumns.headers(training_percentiles().size());
}

// "Trainer0:  p50:   0.0210s    3286/s  p75: ..." (no newline). `examples`: per epoch.
std::string hybrid_row(const std::string& label, const std::vector<double>& seconds,
                       double examples) {
  return pad_left(label, kLabelWidth) + ":" +
         kRateColumns.cells(seconds, examples, training_percentiles());
}

}  // namespace

void print_hybrid_header(std::ostream& out, const HybridSettings& s, const std::string& reference,
                         const HardwareInfo& hardware) {
  print_suite_title(out, "hybrid (DDP + parameter servers)", 49, version(), torch_version());
  out << "* Distributed backend: " << s.backend << " (dense part), gRPC (servers)\n"
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

std::vector<std::string> hybrid_rows(const HybridResult& result) {
  std::vector<std::string> rows;
  for (const auto& trainer : result.trainers) {
    if (trainer.epoch_seconds.empty()) continue;
    rows.push_back(
        hybrid_row(trainer_label(trainer.trainer), trainer.epoch_seconds, trainer.mean_examples()));
  }
  const std::vector<double> all = pooled_epoch_seconds(result);
  if (!all.empty()) rows.push_back(hybrid_row("All", all, total_examples_per_epoch(result)));
  return rows;
}

void print_hybrid_table(std::ostream& out, const HybridResult& result, const std::string& title) {
  out << "\n" << title << "\n\n" << hybrid_table_header() << "\n";
  for (const auto& row : hybrid_rows(result)) out << row << "\n";
  out << std::flush;
}

void print_hybrid_phases(std::ostream& out, const HybridResult& result, const std::string& title) {
  const Table table = phase_table();
  out << "\n" << title << "\n\n" << table.header() << "\n";
  PhaseMeans all;
  all.phase_ms.assign(hybrid_phases().size(), std::nullopt);
  for (const auto& trainer : result.trainers) {
    const PhaseMeans means = phase_means(trainer);
    out << phase_row(table, trainer_label(trainer.trainer), means) << "\n";
    all.epoch_ms += means.epoch_ms;
    for (std::size_t i = 0; i < means.phase_ms.size(); ++i) {
      if (means.phase_ms[i]) all.phase_ms[i] = all.phase_ms[i].value_or(0.0) + *means.phase_ms[i];
    }
  }
  if (!result.trainers.empty()) {
    const auto count = static_cast<double>(result.trainers.size());
    all.epoch_ms /= count;
    for (auto& ms : all.phase_ms) {
      if (ms) *ms /= count;
    }
    out << phase_row(table, "All", all) << "\n";
  }
  out << std::flush;
}

std::vector<double> hybrid_ratio_by_repeat(const std::vector<HybridResult>& gradwire,
                                           const std::vector<HybridResult>& reference) {
  std::vector<double> ratios;
  const std::size_t count = std::min(gradwire.size(), reference.size());
  for (std::size_t r = 0; r < count; ++r) {
    const double theirs = all_p50_examples_per_second(reference[r]);
    if (theirs > 0) ratios.push_back(all_p50_examples_per_second(gradwire[r]) / theirs);
  }
  return ratios;
}

void print_hybrid_comparison(std::ostream& out, const HybridResult& gradwire,
                             const HybridResult& reference, const std::string& title,
                             const std::vector<double>& ratio_by_repeat) {
  out << "\n--- " << title << " ---\n"
      << "(gradwire/pytorch: ratio of ex/sec; above 1 means gradwire trains faster)\n\n";
  const std::vector<double> ours = pooled_epoch_seconds(gradwire);
  const std::vector<double> theirs = pooled_epoch_seconds(reference);
  if (ours.empty() || theirs.empty()) {
    out << "(nothing to compare: a side measured no epochs)\n" << std::flush;
    return;
  }
  const double our_examples = total_examples_per_epoch(gradwire);
  const double their_examples = total_examples_per_epoch(reference);
  out << std::string(7, ' ') << hybrid_table_header() << "\n"
      << "gradwire " << hybrid_row("All", ours, our_examples) << "\n"
      << "pytorch  " << hybrid_row("All", theirs, their_examples) << "\n";
  std::string ratios = "gradwire/pytorch ex/s: ";
  const auto a = rate_percentiles(ours, our_examples, training_percentiles());
  const auto b = rate_percentiles(theirs, their_examples, training_percentiles());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double ratio =
        b[i].examples_per_second > 0 ? a[i].examples_per_second / b[i].examples_per_second : 0.0;
    ratios += (i == 0 ? "" : "  ") + percentile_name(a[i].percentile).substr(2) +
              format_fixed(ratio, 2) + "x";
  }
  out << ratios << "\n";
  if (ratio_by_repeat.size() > 1) {
    out << "p50 ratio by repeat:";
    for (const double ratio : ratio_by_repeat) out << " " << format_fixed(ratio, 2) << "x";
    out << ", median " << format_fixed(percentile(ratio_by_repeat, 50), 2) << "x\n";
  }
  out << std::flush;
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
          {"backend", s.backend},
          {"repeat", s.repeat}};
}

// The generic rows of one side: sec/epoch by trainer.
void add_hybrid_rows(RowSet& rows, const HybridResult& result) {
  for (const auto& trainer : result.trainers) {
    rows.rows.push_back({{{"implementation", result.implementation}, {"trainer", trainer.trainer}},
                         trainer.epoch_seconds});
  }
}

}  // namespace

nlohmann::json hybrid_document(const HybridDocumentInputs& inputs) {
  nlohmann::json document = make_document("hybrid", inputs.metadata);
  document["implementation"] = "gradwire";
  document["settings"] = hybrid_settings_json(inputs.settings);
  document["trainers"] = trainers_to_json(inputs.gradwire);
  document["summary"] = {{"all", all_summary(inputs.gradwire)}};
  RowSet rows{{"implementation", "trainer"}, "s", "trainer", "implementation", {}};
  add_hybrid_rows(rows, inputs.gradwire);
  if (inputs.reference) {
    nlohmann::json reference = *inputs.reference;
    const HybridResult theirs = parse_hybrid_result(reference, "the PyTorch reference");
    add_hybrid_rows(rows, theirs);
    reference["summary"] = {{"all", all_summary(theirs)}};
    const double their_p50 = all_p50_examples_per_second(theirs);
    document["comparison"] = {
        {"all_p50_ex_s_ratio",
         their_p50 > 0 ? all_p50_examples_per_second(inputs.gradwire) / their_p50 : 0.0},
        {"ratio_by_repeat", inputs.ratio_by_repeat}};
    document["reference"] = std::move(reference);
  }
  document["rows"] = to_json(rows);
  return document;
}

}  // namespace gradwire::bench
