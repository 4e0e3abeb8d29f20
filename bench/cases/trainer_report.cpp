#include "cases/trainer_report.h"

#include <cmath>
#include <optional>

#include "harness/stats.h"

namespace gradwire::bench {

namespace {

constexpr int kLabelWidth = 8;     // PyTorch's DDP + RPC benchmark: "%8s:"
constexpr int kSideNameWidth = 9;  // "gradwire " before a comparison's All rows

std::string trainer_label(int trainer) { return "Trainer" + std::to_string(trainer); }

double mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (const double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

// Mean ms per step of each phase (nullopt: the side does not record it), then the step.
struct PhaseMeans {
  std::vector<std::optional<double>> phase_ms;
  double step_ms = 0;
};

PhaseMeans phase_means(const TrainerSamples& trainer, const std::vector<std::string>& phases) {
  PhaseMeans means;
  means.step_ms = mean(trainer.seconds) * 1e3;
  for (const auto& phase : phases) {
    const auto found = trainer.phase_seconds.find(phase);
    if (found == trainer.phase_seconds.end() || found->second.empty()) {
      means.phase_ms.push_back(std::nullopt);
    } else {
      means.phase_ms.push_back(mean(found->second) * 1e3);
    }
  }
  return means;
}

std::string share_cell(double ms, double step_ms) {
  const double share = step_ms > 0 ? 100.0 * ms / step_ms : 0.0;
  return format_fixed(ms, 2) + " (" + format_fixed(share, 0) + "%)";
}

Table phase_table(const std::vector<std::string>& phases, const std::string& step) {
  std::vector<Column> columns = {{"", kLabelWidth + 1, Align::kLeft}, {step + " ms", 10}};
  for (const auto& phase : phases) columns.push_back({phase + " ms", 17});
  columns.push_back({"other ms", 17});
  return Table(columns);
}

std::string phase_row(const Table& table, const std::string& label, const PhaseMeans& means) {
  std::vector<std::string> cells = {label + ":", format_fixed(means.step_ms, 2)};
  double covered = 0;
  for (const auto& ms : means.phase_ms) {
    cells.push_back(ms ? share_cell(*ms, means.step_ms) : "n/a");
    covered += ms.value_or(0.0);
  }
  // What no phase covers; rounding can leave a side that records every part at -0.00.
  const double other = means.step_ms - covered;
  cells.push_back(share_cell(std::abs(other) < 5e-3 ? 0.0 : other, means.step_ms));
  return table.row(cells);
}

}  // namespace

std::string trainer_table_header(const RateColumns& columns) {
  return std::string(static_cast<std::size_t>(kLabelWidth + 1), ' ') +
         columns.headers(training_percentiles().size());
}

std::string trainer_row(const std::string& label, const std::vector<double>& seconds,
                        double examples, const RateColumns& columns) {
  return pad_left(label, kLabelWidth) + ":" +
         columns.cells(seconds, examples, training_percentiles());
}

std::vector<std::string> trainer_rows(const TrainerResults& result, const RateColumns& columns) {
  std::vector<std::string> rows;
  for (const auto& trainer : result.trainers) {
    if (trainer.seconds.empty()) continue;
    rows.push_back(trainer_row(trainer_label(trainer.trainer), trainer.seconds,
                               trainer.mean_examples(), columns));
  }
  const std::vector<double> all = pooled_seconds(result);
  if (!all.empty()) {
    rows.push_back(trainer_row("All", all, total_examples_per_step(result), columns));
  }
  return rows;
}

void print_trainer_table(std::ostream& out, const TrainerResults& result, const std::string& title,
                         const RateColumns& columns) {
  out << "\n" << title << "\n\n" << trainer_table_header(columns) << "\n";
  for (const auto& row : trainer_rows(result, columns)) out << row << "\n";
  out << std::flush;
}

void print_phase_split(std::ostream& out, const TrainerResults& result, const std::string& title,
                       const std::vector<std::string>& phases, const std::string& step) {
  const Table table = phase_table(phases, step);
  out << "\n" << title << "\n\n" << table.header() << "\n";
  PhaseMeans all;
  all.phase_ms.assign(phases.size(), std::nullopt);
  for (const auto& trainer : result.trainers) {
    const PhaseMeans means = phase_means(trainer, phases);
    out << phase_row(table, trainer_label(trainer.trainer), means) << "\n";
    all.step_ms += means.step_ms;
    for (std::size_t i = 0; i < means.phase_ms.size(); ++i) {
      if (means.phase_ms[i]) all.phase_ms[i] = all.phase_ms[i].value_or(0.0) + *means.phase_ms[i];
    }
  }
  if (!result.trainers.empty()) {
    const auto count = static_cast<double>(result.trainers.size());
    all.step_ms /= count;
    for (auto& ms : all.phase_ms) {
      if (ms) *ms /= count;
    }
    out << phase_row(table, "All", all) << "\n";
  }
  out << std::flush;
}

void print_trainer_comparison(std::ostream& out, const TrainerResults& ours,
                              const TrainerResults& theirs, const std::string& title,
                              const std::vector<double>& ratio_by_repeat,
                              const RateColumns& columns, const SideNames& names) {
  const std::string ratio_name = names.ours + "/" + names.theirs;
  out << "\n--- " << title << " ---\n"
      << "(" << ratio_name << ": ratio of ex/sec; above 1 means " << names.ours
      << " trains faster)\n\n";
  const std::vector<double> a_seconds = pooled_seconds(ours);
  const std::vector<double> b_seconds = pooled_seconds(theirs);
  if (a_seconds.empty() || b_seconds.empty()) {
    out << "(nothing to compare: a side measured no steps)\n" << std::flush;
    return;
  }
  const double a_examples = total_examples_per_step(ours);
  const double b_examples = total_examples_per_step(theirs);
  out << std::string(kSideNameWidth - 2, ' ') << trainer_table_header(columns) << "\n"
      << pad_right(names.ours, kSideNameWidth) << trainer_row("All", a_seconds, a_examples, columns)
      << "\n"
      << pad_right(names.theirs, kSideNameWidth)
      << trainer_row("All", b_seconds, b_examples, columns) << "\n";
  std::string ratios = ratio_name + " ex/s: ";
  const auto a = rate_percentiles(a_seconds, a_examples, training_percentiles());
  const auto b = rate_percentiles(b_seconds, b_examples, training_percentiles());
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

nlohmann::json all_summary(const TrainerResults& result, const StepNames& names) {
  nlohmann::json summary = nlohmann::json::object();
  const std::vector<double> seconds = pooled_seconds(result);
  if (seconds.empty()) return summary;
  const double examples = total_examples_per_step(result);
  summary[names.examples_key()] = examples;
  for (const auto& row : rate_percentiles(seconds, examples, training_percentiles())) {
    const std::string p = "p" + std::to_string(row.percentile);
    summary[p + "_sec_per_" + names.step] = row.seconds;
    summary[p + "_ex_per_sec"] = row.examples_per_second;
  }
  return summary;
}

void add_trainer_rows(RowSet& rows, const TrainerResults& result) {
  for (const auto& trainer : result.trainers) {
    rows.rows.push_back({{{"implementation", result.implementation}, {"trainer", trainer.trainer}},
                         trainer.seconds});
  }
}

}  // namespace gradwire::bench
