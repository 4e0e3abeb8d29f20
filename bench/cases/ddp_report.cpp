#include "cases/ddp_report.h"

#include <algorithm>
#include <cstdio>

#include "harness/stats.h"
#include "harness/table.h"

namespace gradwire::bench {

namespace {

// Width of "   2 ranks --    1M/2R:" (upstream: "%4d GPUs -- %8s:").
constexpr int kPrefixWidth = 23;

std::string prefix(int world_size, const std::string& label) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%4d ranks -- %8s", world_size, label.c_str());
  return buffer;
}

std::string percentile_cells(const std::vector<double>& measurements, std::int64_t batch_size) {
  return kDdpRateColumns.cells(measurements, static_cast<double>(batch_size),
                               training_percentiles());
}

std::string column_headers(int prefix_width) {
  return std::string(static_cast<std::size_t>(prefix_width), ' ') +
         kDdpRateColumns.headers(training_percentiles().size());
}

}  // namespace

std::string format_seconds(double seconds) {
  const int decimals = seconds >= 1 ? 3 : (seconds >= 0.01 ? 4 : 6);
  return format_fixed(seconds, decimals);
}

void print_ddp_header(std::ostream& out, const DdpHeader& header) {
  print_suite_title(out, "ddp", 41, header.gradwire_version, header.torch_version);
  out << "* Distributed backend: " << header.backend << "\n"
      << "* Maximum bucket size: " << header.bucket_cap_mb << "MB (first bucket "
      << header.first_bucket_mb << "MB)\n"
      << "* Ranks: " << header.ranks << " (" << header.ranks_per_node
      << " per machine), threads per rank: " << header.threads_per_rank << "\n"
      << "* Input: random, " << header.image_size << "x" << header.image_size
      << " for the ResNets; random labels; cross-entropy; SGD lr 0.001 momentum 0.9\n"
      << "* Iterations: " << header.warmup << " warm-up + " << header.iterations
      << " timed per rank and configuration; percentiles over every rank's iterations\n"
      << "* ex/sec: batch size / sec/iter, per rank (the job processes ranks times as many)\n";
  if (!header.reference.empty()) out << "* Reference: " << header.reference << "\n";
  if (!header.memory.empty()) out << "* Memory: " << header.memory << "\n";
  out << "\n";
  print_hardware_block(out, header.hardware, header.threads_per_rank);
}

std::string ddp_benchmark_title(const std::string& model, std::int64_t batch_size) {
  return "Benchmark: " + model + " with batch size " + std::to_string(batch_size);
}

std::string ddp_table_header() { return column_headers(kPrefixWidth); }

std::string ddp_row(const DdpRound& round, const std::string& label, std::int64_t batch_size) {
  return prefix(round.world_size(), label) + ":" + percentile_cells(round.measurements, batch_size);
}

std::vector<std::string> ddp_comparison_rows(int world_size, const std::string& label,
                                             const std::vector<double>& gradwire_seconds,
                                             const std::vector<double>& reference_seconds,
                                             std::int64_t batch_size) {
  const std::string blank(static_cast<std::size_t>(kPrefixWidth - 1), ' ');
  std::string ratios;
  for (const int p : training_percentiles()) {
    const double theirs = percentile(reference_seconds, p);
    const double ratio = theirs > 0 ? percentile(gradwire_seconds, p) / theirs : 0.0;
    ratios += percentile_name(p) + pad_left(format_fixed(ratio, 3) + "x", 9) + std::string(10, ' ');
  }
  return {
      prefix(world_size, label) + " " + pad_left("gradwire", 16) + ":" +
          percentile_cells(gradwire_seconds, batch_size),
      blank + " " + pad_left("pytorch", 16) + ":" + percentile_cells(reference_seconds, batch_size),
      trim_right(blank + " " + pad_left("gradwire/pytorch", 16) + ":" + ratios)};
}

const DdpRound* find_matching_round(const DdpModelResult& result, const DdpRound& round) {
  for (const auto& candidate : result.rounds) {
    // A round of a run over several backends matches only its own backend and hook; a round that
    // names none (PyTorch's, a single-backend run) matches any.
    const bool same_variant = candidate.variant().empty() || round.variant().empty() ||
                              candidate.variant() == round.variant();
    if (candidate.ddp == round.ddp && candidate.world_size() == round.world_size() &&
        same_variant) {
      return &candidate;
    }
  }
  return nullptr;
}

const DdpModelResult* find_matching_model(const std::vector<DdpModelResult>& results,
                                          const std::string& model, std::int64_t batch_size) {
  for (const auto& result : results) {
    if (result.model == model && result.batch_size == batch_size) return &result;
  }
  return nullptr;
}

std::vector<double> p50_ratio_by_repeat(const DdpRepeats& repeats, const std::string& model,
                                        std::int64_t batch_size, const DdpRound& round) {
  std::vector<double> ratios;
  const std::size_t count = std::min(repeats.ours.size(), repeats.reference.size());
  for (std::size_t r = 0; r < count; ++r) {
    const DdpModelResult* a = find_matching_model(repeats.ours[r], model, batch_size);
    const DdpModelResult* b = find_matching_model(repeats.reference[r], model, batch_size);
    const DdpRound* x = a ? find_matching_round(*a, round) : nullptr;
    const DdpRound* y = b ? find_matching_round(*b, round) : nullptr;
    if (x == nullptr || y == nullptr) continue;
    const double denominator = percentile(y->measurements, 50);
    if (denominator > 0) ratios.push_back(percentile(x->measurements, 50) / denominator);
  }
  return ratios;
}

void print_ddp_comparison(std::ostream& out, const std::vector<DdpModelResult>& gradwire,
                          const DdpReport& reference, int ranks_per_node,
                          const std::string& reference_title, const DdpRepeats& repeats) {
  out << "\n--- " << reference_title << " ---\n"
      << "(gradwire/pytorch: ratio of sec/iter; below 1 means gradwire is faster)\n";
  for (const auto& result : gradwire) {
    out << "\n" << ddp_benchmark_title(result.model, result.batch_size) << "\n\n";
    const DdpModelResult* theirs =
        find_matching_model(reference.results, result.model, result.batch_size);
    if (theirs == nullptr) {
      out << "(the reference did not measure this model)\n";
      continue;
    }
    out << column_headers(kPrefixWidth + 17) << "\n";
    for (const auto& round : result.rounds) {
      const DdpRound* match = find_matching_round(*theirs, round);
      const std::string label = round_label(round, ranks_per_node);
      if (match == nullptr) {
        out << prefix(round.world_size(), label) << "  (not measured by the reference)\n";
        continue;
      }
      for (const auto& line : ddp_comparison_rows(round.world_size(), label, round.measurements,
                                                  match->measurements, result.batch_size)) {
        out << line << "\n";
      }
      const auto ratios = p50_ratio_by_repeat(repeats, result.model, result.batch_size, round);
      if (ratios.size() > 1) {
        std::string line =
            std::string(kPrefixWidth - 1, ' ') + " " + pad_left("p50 by repeat", 16) + ": ";
        for (const double ratio : ratios) line += " " + format_fixed(ratio, 3) + "x";
        out << line << ", median " << format_fixed(percentile(ratios, 50), 3) << "x\n";
      }
    }
    for (const auto& round : result.rounds) {
      if (round.ddp || round.world_size() != 1) continue;
      const DdpRound* match = find_matching_round(*theirs, round);
      if (match == nullptr) continue;
      out << "\n";
      for (const auto& line : compute_parity_lines(round.measurements, match->measurements)) {
        out << line << "\n";
      }
      break;
    }
  }
  out << std::flush;
}

}  // namespace gradwire::bench
