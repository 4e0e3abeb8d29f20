#include "cases/trainer_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "cases/ps_transports.h"
#include "gradwire/common/error.h"
#include "harness/repeats.h"
#include "harness/rows.h"
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

double sum(const std::vector<double>& values) {
  double total = 0;
  for (const double v : values) total += v;
  return total;
}

std::string bytes_text(double bytes) {
  return format_bytes(static_cast<std::uint64_t>(bytes > 0 ? bytes + 0.5 : 0.0));
}

void print_bytes(std::ostream& out, const TrainerResults& side, const std::string& title,
                 const std::string& step) {
  std::vector<std::string> names;
  for (const auto& trainer : side.trainers) {
    for (const auto& entry : trainer.bytes) {
      if (std::find(names.begin(), names.end(), entry.first) == names.end())
        names.push_back(entry.first);
    }
  }
  std::vector<Column> columns = {{"", kLabelWidth + 1, Align::kLeft}};
  for (const auto& name : names) columns.push_back({name + "/" + step, 13});
  for (const auto& name : names) columns.push_back({name + "/s", 15});
  const Table table(columns);
  auto row = [&](const std::string& label, const std::map<std::string, ByteRate>& rates) {
    std::vector<std::string> cells = {label + ":"};
    for (const auto& name : names) cells.push_back(bytes_text(rates.at(name).per_step));
    for (const auto& name : names) cells.push_back(bytes_text(rates.at(name).per_second) + "/s");
    return table.row(cells);
  };
  out << "\n" << title << "\n\n" << table.header() << "\n";
  for (const auto& trainer : side.trainers) {
    out << row(trainer_label(trainer.trainer), byte_rates(trainer)) << "\n";
  }
  out << row("All", total_byte_rates(side)) << "\n" << std::flush;
}

bool counts_bytes(const TrainerResults& side) {
  for (const auto& trainer : side.trainers) {
    if (!trainer.bytes.empty()) return true;
  }
  return false;
}

// "an iteration", "an epoch".
std::string with_article(const std::string& word) {
  const bool vowel = !word.empty() && std::string("aeiou").find(word.front()) != std::string::npos;
  return (vowel ? "an " : "a ") + word;
}

nlohmann::json passes_json(const TrainerResults& side, int steps) {
  nlohmann::json passes = nlohmann::json::array();
  for (const auto& pass : pass_figures(side, steps)) {
    passes.push_back({{"pass", pass.pass},
                      {"elapsed_s", pass.elapsed_s},
                      {"images", pass.images},
                      {"images_per_second", pass.images_per_second()}});
  }
  return passes;
}

// A side's "summary" and "passes" (when counted), added to `side` (the reference's document or a
// side's own object).
void add_side_figures(nlohmann::json& side, const TrainerResults& result, const StepNames& names,
                      int steps_per_pass) {
  side["trainers"] = trainers_to_json(result, names);
  side["summary"] = {{"all", all_summary(result, names)}};
  if (counts_bytes(result)) {
    nlohmann::json bytes = nlohmann::json::object();
    for (const auto& [name, rate] : total_byte_rates(result)) {
      bytes[name + "_per_" + names.step] = rate.per_step;
      bytes[name + "_per_second"] = rate.per_second;
    }
    side["summary"]["bytes"] = std::move(bytes);
  }
  if (steps_per_pass > 0) side["passes"] = passes_json(result, steps_per_pass);
  const AlternatedSteps alternated = alternated_steps(result);
  if (alternated.comparable()) {
    side["summary"]["timeline_alternating"] = alternated.to_json(names.step);
  }
}

// The p50 ex/s ratio of the first side over `theirs`, pooled and per repeat.
nlohmann::json ratio_json(const TrainerResults& ours, const TrainerResults& theirs,
                          const std::vector<TrainerResults>& ours_by_repeat,
                          const std::vector<TrainerResults>& theirs_by_repeat) {
  const double their_rate = all_p50_examples_per_second(theirs);
  const std::vector<double> by_repeat = p50_ratio_by_repeat(ours_by_repeat, theirs_by_repeat);
  return {{"pooled", their_rate > 0 ? all_p50_examples_per_second(ours) / their_rate : 0.0},
          {"by_repeat", by_repeat},
          {"median", by_repeat.empty() ? 0.0 : percentile(by_repeat, 50)}};
}

std::vector<TrainerResults> results_of(const std::vector<JobResult>& repeats) {
  std::vector<TrainerResults> results;
  for (const auto& repeat : repeats) results.push_back(repeat.results);
  return results;
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
                              const RateColumns& columns, const SideNames& names,
                              RatioOf ratio_of) {
  const bool of_time = ratio_of == RatioOf::kTime;
  const std::string ratio_name = names.ours + "/" + names.theirs;
  const std::string what = of_time ? columns.time_header : "ex/s";
  out << "\n--- " << title << " ---\n"
      << "(" << ratio_name << ": ratio of " << (of_time ? what : "ex/sec") << "; "
      << (of_time ? "below 1 means " + names.ours + " is faster"
                  : "above 1 means " + names.ours + " trains faster")
      << ")\n\n";
  const std::vector<double> a_seconds = pooled_seconds(ours);
  const std::vector<double> b_seconds = pooled_seconds(theirs);
  if (a_seconds.empty() || b_seconds.empty()) {
    out << "(nothing to compare: a side measured no steps)\n" << std::flush;
    return;
  }
  const double a_examples = total_examples_per_step(ours);
  const double b_examples = total_examples_per_step(theirs);
  const int width = std::max<int>(
      kSideNameWidth, static_cast<int>(std::max(names.ours.size(), names.theirs.size())) + 1);
  out << std::string(static_cast<std::size_t>(width - 2), ' ') << trainer_table_header(columns)
      << "\n"
      << pad_right(names.ours, width) << trainer_row("All", a_seconds, a_examples, columns) << "\n"
      << pad_right(names.theirs, width) << trainer_row("All", b_seconds, b_examples, columns)
      << "\n";
  std::string ratios = ratio_name + " " + what + ": ";
  const auto a = rate_percentiles(a_seconds, a_examples, training_percentiles());
  const auto b = rate_percentiles(b_seconds, b_examples, training_percentiles());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double theirs = of_time ? b[i].seconds : b[i].examples_per_second;
    const double ratio =
        theirs > 0 ? (of_time ? a[i].seconds : a[i].examples_per_second) / theirs : 0.0;
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

std::string TrainingFormat::step_short() const {
  const auto slash = columns.time_header.find('/');
  return slash == std::string::npos ? step : columns.time_header.substr(slash + 1);
}

std::vector<std::string> recorded_phases(const TrainerResults& result,
                                         const std::vector<std::string>& phases) {
  std::vector<std::string> recorded;
  for (const auto& phase : phases) {
    for (const auto& trainer : result.trainers) {
      const auto found = trainer.phase_seconds.find(phase);
      if (found != trainer.phase_seconds.end() && !found->second.empty()) {
        recorded.push_back(phase);
        break;
      }
    }
  }
  return recorded;
}

std::vector<PassFigures> pass_figures(const TrainerResults& result, int steps) {
  if (steps < 1) throw InvalidArgument("a pass needs at least one step");
  if (result.trainers.empty()) return {};
  std::size_t measured = result.trainers.front().seconds.size();
  for (const auto& trainer : result.trainers) measured = std::min(measured, trainer.seconds.size());
  const auto per_pass = static_cast<std::size_t>(steps);
  std::vector<PassFigures> passes;
  for (std::size_t first = 0; first + per_pass <= measured; first += per_pass) {
    PassFigures pass;
    pass.pass = static_cast<int>(passes.size());
    for (const auto& trainer : result.trainers) {
      double elapsed = 0;
      for (std::size_t i = first; i < first + per_pass; ++i) {
        elapsed += trainer.seconds[i];
        pass.images += static_cast<double>(trainer.examples[i]);
      }
      pass.elapsed_s = std::max(pass.elapsed_s, elapsed);
    }
    passes.push_back(pass);
  }
  return passes;
}

std::string pass_line(const PassFigures& pass) {
  char buffer[128];
  std::snprintf(buffer, sizeof buffer,
                "Pass = %d, Elapsed = %.2f, Training performance = %f imgs/s", pass.pass,
                pass.elapsed_s, pass.images_per_second());
  return buffer;
}

std::map<std::string, ByteRate> byte_rates(const TrainerSamples& trainer) {
  std::map<std::string, ByteRate> rates;
  const double seconds = sum(trainer.seconds);
  for (const auto& [name, bytes] : trainer.bytes) {
    ByteRate& rate = rates[name];
    if (bytes.empty()) continue;
    rate.per_step = sum(bytes) / static_cast<double>(bytes.size());
    if (seconds > 0) {
      rate.per_second = rate.per_step * static_cast<double>(trainer.seconds.size()) / seconds;
    }
  }
  return rates;
}

std::map<std::string, ByteRate> total_byte_rates(const TrainerResults& result) {
  std::map<std::string, ByteRate> total;
  for (const auto& trainer : result.trainers) {
    for (const auto& [name, rate] : byte_rates(trainer)) {
      total[name].per_step += rate.per_step;
      total[name].per_second += rate.per_second;
    }
  }
  return total;
}

void print_side(std::ostream& out, const TrainerResults& side, const std::string& title,
                const TrainingFormat& format, int steps_per_pass) {
  if (steps_per_pass > 0) {  // under the side's title; the tables have their own
    out << "\n" << title << "\n\n";
    for (const auto& pass : pass_figures(side, steps_per_pass)) out << pass_line(pass) << "\n";
  }
  print_trainer_table(out, side, title + ": per trainer", format.columns);
  print_phase_split(
      out, side,
      title + ": where " + with_article(format.step) + " goes (mean ms per " + format.step + ")",
      recorded_phases(side, format.phases), format.step_short());
  if (counts_bytes(side)) print_bytes(out, side, title + ": bytes moved", format.step_short());
  const AlternatedSteps alternated = alternated_steps(side);
  if (alternated.comparable()) out << "\n" << title << ": " << alternated.line(format.step) << "\n";
}

nlohmann::json to_json(const JobResult& result, const StepNames& names) {
  return {{"implementation", result.results.implementation},
          {"trainers", trainers_to_json(result.results, names)},
          {"backend", result.facts.backend},
          {"transports", result.facts.transports},
          {"details", result.facts.details},
          {"text", result.facts.text}};
}

JobResult parse_job_result(const nlohmann::json& document, const std::string& source,
                           const StepNames& names) {
  JobResult result;
  result.results = parse_trainer_results(document, source, names);
  result.facts.backend = document.value("backend", std::string());
  result.facts.transports = document.value("transports", std::vector<std::string>());
  result.facts.details = document.value("details", nlohmann::json());
  result.facts.text = document.value("text", std::string());
  return result;
}

nlohmann::json training_document(const TrainingFormat& format,
                                 const TrainingDocumentInputs& inputs) {
  GRADWIRE_CHECK(!inputs.jobs.empty() && inputs.sides.size() == inputs.jobs.size() &&
                 inputs.repeats.size() == inputs.jobs.size());
  const StepNames names = format.step_names();
  nlohmann::json document = make_document(format.name, inputs.metadata);
  document["implementation"] = inputs.sides.front().implementation;
  document["settings"] = inputs.settings;
  document["step"] = format.step;
  document["step_time"] = format.columns.time_header;
  document["phases"] = format.phases;
  if (inputs.steps_per_pass > 0) document["steps_per_pass"] = inputs.steps_per_pass;
  RowSet rows{{"implementation", "trainer"}, "s", "trainer", "implementation", {}};
  nlohmann::json compare = nlohmann::json::object();
  nlohmann::json comparison = nlohmann::json::object();
  const std::vector<TrainerResults> own_repeats = results_of(inputs.repeats.front());
  for (std::size_t j = 0; j < inputs.jobs.size(); ++j) {
    std::vector<std::string> backends;
    std::vector<std::vector<std::string>> transports;
    for (const auto& repeat : inputs.repeats[j]) {
      backends.push_back(repeat.facts.backend);
      transports.push_back(repeat.facts.transports);
    }
    nlohmann::json side = {{"implementation", inputs.sides[j].implementation},
                           {"threads", inputs.jobs[j].threads}};
    if (!backends.empty() && !backends.front().empty())
      side["backend"] = summarize_values(backends);
    add_side_figures(side, inputs.sides[j], names, inputs.steps_per_pass);
    add_trainer_rows(rows, inputs.sides[j]);
    if (j == 0) {
      if (inputs.jobs[j].servers > 0) {
        document["transport"] = summarize_transports(transports);
        document["transports"] = transports;
      }
      if (!inputs.repeats[j].empty() && !inputs.repeats[j].front().facts.details.is_null()) {
        document["details"] = inputs.repeats[j].front().facts.details;
      }
      for (const auto& item : side.items()) document[item.key()] = item.value();
      continue;
    }
    comparison[inputs.sides[j].implementation] = ratio_json(
        inputs.sides.front(), inputs.sides[j], own_repeats, results_of(inputs.repeats[j]));
    compare[inputs.jobs[j].kind] = std::move(side);
  }
  if (!compare.empty()) document["compare"] = std::move(compare);
  if (inputs.reference) {
    nlohmann::json reference = *inputs.reference;
    const TrainerResults theirs = parse_trainer_results(reference, "the PyTorch reference", names);
    add_side_figures(reference, theirs, names, inputs.steps_per_pass);
    add_trainer_rows(rows, theirs);
    comparison[theirs.implementation] =
        ratio_json(inputs.sides.front(), theirs, own_repeats, inputs.reference_repeats);
    document["reference"] = std::move(reference);
  }
  if (!comparison.empty()) document["comparison"] = std::move(comparison);
  if (inputs.plain_step) {
    document["plain_step"] = plain_step_json(*inputs.plain_step, inputs.plain_names);
  }
  document["rows"] = to_json(rows);
  if (inputs.traces.is_array() && !inputs.traces.empty()) document["traces"] = inputs.traces;
  return document;
}

}  // namespace gradwire::bench
