#include "cases/collectives_report.h"

#include <algorithm>

#include "harness/bandwidth.h"
#include "harness/rows.h"
#include "harness/table.h"

namespace gradwire::bench {

namespace {

const Table& row_table() {
  static const Table kTable({{"size", 10, Align::kRight},
                             {"count", 10, Align::kRight},
                             {"iters", 5, Align::kRight},
                             {"time(us)", 11, Align::kRight},
                             {"p50(us)", 11, Align::kRight},
                             {"p99(us)", 11, Align::kRight},
                             {"algbw(GB/s)", 11, Align::kRight},
                             {"busbw(GB/s)", 11, Align::kRight},
                             {"%memcpy", 7, Align::kRight},
                             {"#wrong", 6, Align::kRight}});
  return kTable;
}

std::string percent_of(double value, double reference) {
  return reference > 0 ? format_fixed(100.0 * value / reference, 1) : "-";
}

double peak_busbw(const CollectiveResult& result) {
  double peak = 0;
  for (const auto& row : result.rows) peak = std::max(peak, row.busbw_gbps);
  return peak;
}

}  // namespace

CollectiveRow make_collective_row(std::uint64_t bytes, std::int64_t count,
                                  const IterationCounts& iterations,
                                  const std::vector<double>& seconds, double bus_factor,
                                  std::int64_t wrong) {
  CollectiveRow row;
  row.bytes = bytes;
  row.count = count;
  row.iterations = iterations;
  row.seconds = summarize(seconds);
  row.samples = seconds;
  row.algbw_gbps = gigabytes_per_second(static_cast<double>(bytes), row.seconds.mean);
  row.busbw_gbps = row.algbw_gbps * bus_factor;
  row.wrong = wrong;
  return row;
}

void print_collectives_header(std::ostream& out, const RunMetadata& metadata) {
  out << "# gradwire-bench collectives\n"
      << "# gradwire " << metadata.gradwire_version << ", torch " << metadata.torch_version
      << (metadata.torch_cuda.empty() ? " (CPU only)" : " (CUDA " + metadata.torch_cuda + ")")
      << ", backend " << metadata.backend << ", ranks " << metadata.ranks << ", threads per rank "
      << metadata.threads_per_rank
      << (metadata.bound_cpus.empty() ? std::string()
                                      : ", rank 0 bound to CPUs " + metadata.bound_cpus)
      << "\n"
      << "# " << metadata.cpu_model << ", " << metadata.cores << " cores, host "
      << metadata.hostname << ", " << metadata.date << "\n"
      << "# memcpy reference: " << format_fixed(metadata.memcpy_gbps, 2)
      << " GB/s (one thread, best of 5 copies of 256 MiB)\n"
      << "# time: mean over iterations of the slowest rank's time; algbw = size / time;\n"
      << "# busbw = algbw * bus factor (nccl-tests); %memcpy = busbw / memcpy reference\n";
}

void print_collective_title(std::ostream& out, const CollectiveResult& result, int ranks) {
  out << "#\n# " << result.op << (result.detail.empty() ? "" : " (" + result.detail + ")")
      << ", float32, " << ranks << " ranks"
      << (result.backend.empty() ? "" : ", backend " + result.backend)
      << (result.shared_buffers ? ", shared buffers" : "") << ", bus factor "
      << format_fixed(result.bus_factor, 3) << "\n"
      << row_table().header() << "\n";
}

void print_collective_row(std::ostream& out, const CollectiveRow& row, double memcpy_gbps) {
  out << row_table().row(
             {std::to_string(row.bytes), std::to_string(row.count),
              std::to_string(row.iterations.timed), format_fixed(row.seconds.mean * 1e6, 1),
              format_fixed(row.seconds.p50 * 1e6, 1), format_fixed(row.seconds.p99 * 1e6, 1),
              format_fixed(row.algbw_gbps, 3), format_fixed(row.busbw_gbps, 3),
              percent_of(row.busbw_gbps, memcpy_gbps), std::to_string(row.wrong)})
      << std::endl;
}

void print_collective_footer(std::ostream& out, const CollectiveResult& result,
                             double memcpy_gbps) {
  std::int64_t wrong = 0;
  double busbw_sum = 0;
  for (const auto& row : result.rows) {
    wrong += row.wrong;
    busbw_sum += row.busbw_gbps;
  }
  const double average = result.rows.empty() ? 0 : busbw_sum / result.rows.size();
  const double peak = peak_busbw(result);
  out << "# " << result.op << (result.backend.empty() ? "" : " on " + result.backend)
      << ": wrong values " << wrong << (wrong == 0 ? " (OK)" : " (FAILED)") << ", avg busbw "
      << format_fixed(average, 3) << " GB/s, peak busbw " << format_fixed(peak, 3)
      << " GB/s = " << percent_of(peak, memcpy_gbps) << "% of memcpy" << std::endl;
}

nlohmann::json collectives_document(const RunMetadata& metadata,
                                    const CollectivesSettings& settings,
                                    const std::vector<CollectiveResult>& results) {
  nlohmann::json document = make_document("collectives", metadata);
  document["settings"] = {{"preset", settings.preset},
                          {"backends", settings.backends},
                          {"buffers", settings.buffers},
                          {"device", settings.device},
                          {"min_bytes", settings.sizes.front()},
                          {"max_bytes", settings.sizes.back()},
                          {"iters", settings.policy.iters},
                          {"warmup", settings.policy.warmup},
                          {"min_warmup_seconds", settings.policy.min_warmup_seconds},
                          {"min_iters", settings.policy.min_iters},
                          {"bytes_per_size", settings.policy.bytes_per_size}};
  std::int64_t total_wrong = 0;
  nlohmann::json ops = nlohmann::json::array();
  RowSet generic{{"op", "backend", "buffers", "bytes"}, "us", "bytes", "op", {}};
  for (const auto& result : results) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : result.rows) {
      total_wrong += row.wrong;
      Row labelled{{{"op", result.op},
                    {"backend", result.backend},
                    {"buffers", result.shared_buffers ? "shared" : "ordinary"},
                    {"bytes", row.bytes}},
                   {}};
      for (const double seconds : row.samples) labelled.samples.push_back(seconds * 1e6);
      generic.rows.push_back(std::move(labelled));
      rows.push_back({{"bytes", row.bytes},
                      {"count", row.count},
                      {"warmup", row.iterations.warmup},
                      {"iters", row.iterations.timed},
                      {"time_us", to_json(row.seconds, 1e6)},
                      {"algbw_gbps", row.algbw_gbps},
                      {"busbw_gbps", row.busbw_gbps},
                      {"busbw_vs_memcpy",
                       metadata.memcpy_gbps > 0 ? row.busbw_gbps / metadata.memcpy_gbps : 0.0},
                      {"wrong", row.wrong}});
    }
    ops.push_back({{"op", result.op},
                   {"backend", result.backend},
                   {"buffers", result.shared_buffers ? "shared" : "ordinary"},
                   {"detail", result.detail},
                   {"dtype", "float32"},
                   {"bus_factor", result.bus_factor},
                   {"peak_busbw_gbps", peak_busbw(result)},
                   {"rows", std::move(rows)}});
  }
  document["results"] = std::move(ops);
  document["rows"] = to_json(generic);
  document["wrong"] = total_wrong;
  return document;
}

}  // namespace gradwire::bench
