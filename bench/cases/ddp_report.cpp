#include "cases/ddp_report.h"

#include <algorithm>
#include <cstdio>

#include "cases/trainer_report.h"
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

std::string ddp_table_header() {
  return std::string(kPrefixWidth, ' ') + kDdpRateColumns.headers(training_percentiles().size());
}

std::string ddp_row(const DdpRound& round, const std::string& label, std::int64_t batch_size) {
  return prefix(round.world_size(), label) + ":" +
         kDdpRateColumns.cells(round.measurements, static_cast<double>(batch_size),
                               training_percentiles());
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
  out << "\n--- " << reference_title << " ---\n";
  for (const auto& result : gradwire) {
    const std::string model = ddp_benchmark_title(result.model, result.batch_size);
    const DdpModelResult* theirs =
        find_matching_model(reference.results, result.model, result.batch_size);
    if (theirs == nullptr) {
      out << "\n" << model << ": the reference did not measure this model\n";
      continue;
    }
    for (const auto& round : result.rounds) {
      const std::string title = model + ", " + round_label(round, ranks_per_node);
      const DdpRound* match = find_matching_round(*theirs, round);
      if (match == nullptr) {
        out << "\n" << title << ": not measured by the reference\n";
        continue;
      }
      print_trainer_comparison(out, round_side(round, result.batch_size, "gradwire"),
                               round_side(*match, result.batch_size, reference.implementation),
                               title,
                               p50_ratio_by_repeat(repeats, result.model, result.batch_size, round),
                               kDdpRateColumns, {"gradwire", "pytorch"}, RatioOf::kTime);
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
