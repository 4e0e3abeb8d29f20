#include "cases/diff.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "cases/ddp_report.h"
#include "gradwire/common/error.h"
#include "harness/report.h"
#include "harness/rows.h"
#include "harness/stats.h"
#include "harness/table.h"
#include "subcommand.h"

namespace gradwire::bench {

namespace {

constexpr int kMinKeyWidth = 20;
constexpr int kValueWidth = 20;
constexpr int kRowPrefixWidth = 11;  // "   2 ranks:"
constexpr int kDeltaWidth = 8;
constexpr int kDiffPercentiles[] = {75, 95};  // upstream's

// The settings of a file, flattened: top-level fields and one level of nested objects
// ("hardware.cpu_model"). Results, the embedded reference and the harness metadata (which repeats
// the top-level fields) are left out.
std::map<std::string, std::string> settings_of(const DdpReport& report) {
  static const std::set<std::string> kSkipped = {"benchmark_results", "reference", "metadata",
                                                 "implementation"};
  std::map<std::string, std::string> settings;
  for (const auto& [key, value] : report.fields.items()) {
    if (kSkipped.count(key) != 0) continue;
    if (value.is_object()) {
      for (const auto& [inner_key, inner_value] : value.items()) {
        settings[key + "." + inner_key] = describe_field(inner_value);
      }
    } else {
      settings[key] = describe_field(value);
    }
  }
  return settings;
}

void print_settings(std::ostream& out, const DdpReport& baseline, const DdpReport& test) {
  const auto a = settings_of(baseline);
  const auto b = settings_of(test);
  std::set<std::string> keys;
  for (const auto& entry : a) keys.insert(entry.first);
  for (const auto& entry : b) keys.insert(entry.first);
  int key_width = kMinKeyWidth;
  for (const auto& key : keys) key_width = std::max(key_width, static_cast<int>(key.size()) + 1);
  const std::string blank(static_cast<std::size_t>(key_width), ' ');
  out << blank << " " << pad_left("baseline", kValueWidth) << "      "
      << pad_left("test", kValueWidth) << "\n"
      << blank << " " << std::string(kValueWidth, '-') << "      " << std::string(kValueWidth, '-')
      << "\n";
  auto line = [&](const std::string& key, const std::string& va, const std::string& vb) {
    out << pad_right(key + ":", key_width) << " " << pad_left(va, kValueWidth) << "  vs  "
        << pad_left(vb, kValueWidth) << "\n";
  };
  line("implementation", baseline.implementation, test.implementation);
  for (const auto& key : keys) {
    const auto va = a.find(key);
    const auto vb = b.find(key);
    line(key, va == a.end() ? "-" : va->second, vb == b.end() ? "-" : vb->second);
  }
  out << "\n";
}

std::string cells(double seconds, std::int64_t batch_size) {
  return kDdpRateColumns.cell(seconds, seconds > 0 ? batch_size / seconds : 0.0);
}

void print_model_header(std::ostream& out) {
  const std::string blank(kRowPrefixWidth, ' ');
  const std::string pair = kDdpRateColumns.header();
  const int pair_width = static_cast<int>(pair.size());
  std::string groups = blank;
  std::string columns = blank;
  for (std::size_t i = 0; i < std::size(kDiffPercentiles); ++i) {
    groups += std::string(7, ' ') + pad_left("baseline", pair_width) + "  " +
              pad_left("test", pair_width) + std::string(1 + kDeltaWidth, ' ');
    columns += std::string(7, ' ') + pair + "  " + pair + " " + pad_left("diff", kDeltaWidth);
  }
  out << trim_right(groups) << "\n" << columns << "\n";
}

std::string row_prefix(const DdpRound& round) {
  char buffer[32];
  if (!round.ddp) {
    if (round.world_size() == 1) return pad_left("no ddp:", kRowPrefixWidth);
    std::snprintf(buffer, sizeof buffer, "%dR no ddp:", round.world_size());  // --side-by-side
    return pad_left(buffer, kRowPrefixWidth);
  }
  std::snprintf(buffer, sizeof buffer, "%4d ranks:", round.world_size());
  return pad_left(buffer, kRowPrefixWidth);
}

void print_model(std::ostream& out, const DdpModelResult& a, const DdpModelResult& b) {
  out << ddp_benchmark_title(a.model, a.batch_size) << "\n\n";
  print_model_header(out);
  for (const auto& round : a.rounds) {
    const DdpRound* other = find_matching_round(b, round);
    if (other == nullptr) {
      out << row_prefix(round) << "  (only in baseline)\n";
      continue;
    }
    std::string line = row_prefix(round);
    for (const int p : kDiffPercentiles) {
      const double va = percentile(round.measurements, p);
      const double vb = percentile(other->measurements, p);
      line += percentile_name(p) + cells(va, a.batch_size) + "  " + cells(vb, b.batch_size) + " " +
              pad_left(delta_text(va, vb), kDeltaWidth);
    }
    out << line << "\n";
  }
  for (const auto& round : b.rounds) {
    if (find_matching_round(a, round) == nullptr) {
      out << row_prefix(round) << "  (only in test)\n";
    }
  }
  out << "\n";
}

// gradwire-bench ddp's, the reference script's or PyTorch's benchmark.py's.
bool is_ddp_document(const nlohmann::json& document) {
  return document.is_object() &&
         (document.contains("benchmark_results") || document.value("benchmark", "") == "ddp");
}

// Prints the comparison of two files: print_ddp_diff when either is a DDP result, else
// print_rows_diff.
void print_diff(std::ostream& out, const std::string& baseline_path, const std::string& test_path) {
  const nlohmann::json baseline = read_json_document(baseline_path);
  const nlohmann::json test = read_json_document(test_path);
  if (is_ddp_document(baseline) || is_ddp_document(test)) {
    print_ddp_diff(out, read_ddp_file(baseline_path), read_ddp_file(test_path));
    return;
  }
  const std::string kind = baseline.value("benchmark", "");
  if (kind != test.value("benchmark", "")) {
    throw InvalidArgument(baseline_path + " and " + test_path +
                          " hold results of different benchmarks: compare like with like");
  }
  out << "gradwire-bench " << kind << ": " << baseline_path << " (baseline) vs " << test_path
      << " (test)\n";
  print_rows_diff(out, parse_row_set(baseline, baseline_path), parse_row_set(test, test_path));
}

}  // namespace

std::string describe_field(const nlohmann::json& value) {
  // Never a language's null ("None", "null"): the reader sees that the file left it unset.
  if (value.is_null()) return "unset";
  if (value.is_string()) {
    std::string text = value.get<std::string>();
    if (!text.empty() && text.back() == '\n') text.pop_back();
    const auto lines = std::count(text.begin(), text.end(), '\n') + 1;
    return lines > 1 ? "(" + std::to_string(lines) + " lines)" : text;
  }
  if (value.is_array()) {
    std::string text;
    for (const auto& item : value) text += (text.empty() ? "" : " ") + describe_field(item);
    return text;
  }
  if (value.is_object()) {
    std::string text;
    for (const auto& item : value.items()) {
      text += (text.empty() ? "" : ", ") + item.key() + " " + describe_field(item.value());
    }
    return "{" + text + "}";
  }
  return value.dump();
}

void print_ddp_diff(std::ostream& out, const DdpReport& baseline, const DdpReport& test) {
  print_settings(out, baseline, test);
  for (const auto& a : baseline.results) {
    const DdpModelResult* b = find_matching_model(test.results, a.model, a.batch_size);
    if (b == nullptr) {
      out << ddp_benchmark_title(a.model, a.batch_size) << ": only in baseline\n\n";
      continue;
    }
    print_model(out, a, *b);
  }
  for (const auto& b : test.results) {
    if (find_matching_model(baseline.results, b.model, b.batch_size) == nullptr) {
      out << ddp_benchmark_title(b.model, b.batch_size) << ": only in test\n\n";
    }
  }
  out << std::flush;
}

Subcommand diff_subcommand() {
  return {"diff",
          "compare two results of one benchmark (any --json; for ddp also PyTorch's benchmark.py "
          "--json)",
          [](CLI::App& command) -> SubcommandRun {
            struct Paths {
              std::string baseline;
              std::string test;
            };
            auto paths = std::make_shared<Paths>();
            command.add_option("baseline", paths->baseline, "the baseline result (JSON)")
                ->required()
                ->check(CLI::ExistingFile);
            command.add_option("test", paths->test, "the result compared with it (JSON)")
                ->required()
                ->check(CLI::ExistingFile);
            return [paths](const std::vector<std::string>&) {
              print_diff(std::cout, paths->baseline, paths->test);
              return 0;
            };
          }};
}

}  // namespace gradwire::bench
