#include "cases/data_bench_report.h"

#include <algorithm>

#include "gradwire/common/error.h"
#include "harness/rows.h"
#include "harness/table.h"

namespace gradwire::bench {

namespace {

const Table& row_table() {
  static const Table kTable({{"set", 13, Align::kLeft},
                             {"comp", 5, Align::kLeft},
                             {"ranks", 5, Align::kRight},
                             {"mode", 7, Align::kLeft},
                             {"MB", 8, Align::kRight},
                             {"records", 8, Align::kRight},
                             {"epochs", 6, Align::kRight},
                             {"p50(ms)", 9, Align::kRight},
                             {"min(ms)", 9, Align::kRight},
                             {"records/s", 11, Align::kRight},
                             {"MB/s", 8, Align::kRight},
                             {"data MB/s", 9, Align::kRight},
                             {"vs raw", 6, Align::kRight},
                             {"vs crc", 6, Align::kRight},
                             {"#wrong", 6, Align::kRight}});
  return kTable;
}

double per_second(double amount, double seconds) { return seconds > 0 ? amount / seconds : 0.0; }

bool same_measured_files(const DataCase& a, const DataCase& b) {
  return a.set == b.set && a.compression == b.compression && a.ranks == b.ranks;
}

}  // namespace

DataRow make_data_row(const DataCase& what, std::uint64_t file_bytes, std::uint64_t records,
                      std::uint64_t record_bytes, const std::vector<double>& seconds,
                      std::int64_t wrong) {
  DataRow row;
  row.what = what;
  row.file_bytes = file_bytes;
  row.records = records;
  row.record_bytes = record_bytes;
  row.seconds = summarize(seconds);
  row.samples = seconds;
  row.records_per_second = per_second(static_cast<double>(records), row.seconds.p50);
  row.file_mbps = per_second(static_cast<double>(file_bytes), row.seconds.p50) / 1e6;
  row.record_mbps = per_second(static_cast<double>(record_bytes), row.seconds.p50) / 1e6;
  row.wrong = wrong;
  return row;
}

void attach_raw_ratios(std::vector<DataRow>& rows) {
  for (auto& row : rows) {
    if (row.what.mode == "raw") continue;
    for (const auto& raw : rows) {
      if (!same_measured_files(raw.what, row.what) || row.seconds.p50 <= 0) continue;
      if (raw.what.mode == "raw") row.vs_raw = raw.seconds.p50 / row.seconds.p50;
      if (raw.what.mode == "raw+crc" && row.what.mode != "raw+crc") {
        row.vs_crc = raw.seconds.p50 / row.seconds.p50;
      }
    }
  }
}

std::optional<double> worst_uncompressed_ratio(const std::vector<DataRow>& rows) {
  std::optional<double> worst;
  for (const auto& row : rows) {
    if (row.what.mode == "raw" || row.what.mode == "raw+crc" || row.what.compression != "none" ||
        !row.vs_raw) {
      continue;
    }
    worst = worst ? std::min(*worst, *row.vs_raw) : *row.vs_raw;
  }
  return worst;
}

void print_data_header(std::ostream& out, const RunMetadata& metadata,
                       const DataSettings& settings) {
  out << "# gradwire-bench data\n"
      << "# gradwire " << metadata.gradwire_version << ", torch " << metadata.torch_version
      << (metadata.torch_cuda.empty() ? " (CPU only)" : " (CUDA " + metadata.torch_cuda + ")")
      << ", ranks up to " << metadata.ranks << "\n"
      << "# " << metadata.cpu_model << ", " << metadata.cores << " cores, host "
      << metadata.hostname << ", " << metadata.date << "\n"
      << "# per measurement: " << settings.warmup << " warm-up + " << settings.epochs
      << " timed epochs, " << settings.repeat << (settings.repeat == 1 ? " sweep" : " sweeps")
      << " pooled; loader prefetch " << settings.prefetch << " chunks\n"
      << "# raw: the same files read with read() from the page cache (the I/O limit), split\n"
      << "# between the ranks by bytes; raw+crc: and the RecordIO CRC-32C of every byte (the\n"
      << "# floor of a verifying reader); static/dynamic: ShardedRecordReader, every record\n"
      << "# delivered; times are the slowest rank's per epoch; rates use the p50 epoch;\n"
      << "# MB/s = file bytes / p50; data MB/s = record bytes / p50;\n"
      << "# vs raw = raw p50 / p50; vs crc = raw+crc p50 / p50\n";
}

void print_data_table(std::ostream& out, const std::vector<DataSetReport>& sets,
                      const std::vector<DataRow>& rows) {
  for (const auto& set : sets) {
    out << "# " << set.name << " (" << set.compression << "): " << set.files << " files, "
        << format_fixed(set.facts.file_bytes / 1e6, 1) << " MB, " << set.facts.records
        << " records in " << set.facts.chunks << " chunks\n";
  }
  out << row_table().header() << "\n";
  for (const auto& row : rows) {
    const bool raw = row.what.mode == "raw" || row.what.mode == "raw+crc";
    out << row_table().row(
               {row.what.set, row.what.compression, std::to_string(row.what.ranks), row.what.mode,
                format_fixed(row.file_bytes / 1e6, 1), raw ? "-" : std::to_string(row.records),
                std::to_string(row.seconds.count), format_fixed(row.seconds.p50 * 1e3, 2),
                format_fixed(row.seconds.min * 1e3, 2),
                raw ? "-" : format_fixed(row.records_per_second, 0), format_fixed(row.file_mbps, 0),
                raw ? "-" : format_fixed(row.record_mbps, 0),
                row.vs_raw ? format_fixed(*row.vs_raw, 2) : "-",
                row.vs_crc ? format_fixed(*row.vs_crc, 2) : "-",
                raw ? "-" : std::to_string(row.wrong)})
        << "\n";
  }
  const auto worst = worst_uncompressed_ratio(rows);
  if (worst) {
    out << "# uncompressed loader vs raw read: worst " << format_fixed(*worst, 2)
        << " (target >= " << format_fixed(kDataTargetRatio, 2)
        << "): " << (*worst >= kDataTargetRatio ? "met" : "NOT met") << "\n";
  }
  out << std::flush;
}

nlohmann::json data_document(const RunMetadata& metadata, const DataSettings& settings,
                             const std::vector<DataSetReport>& sets,
                             const std::vector<DataRow>& rows) {
  nlohmann::json document = make_document("data", metadata);
  document["settings"] = {{"preset", settings.preset},
                          {"epochs", settings.epochs},
                          {"warmup", settings.warmup},
                          {"repeat", settings.repeat},
                          {"prefetch_chunks", settings.prefetch},
                          {"rank_counts", settings.rank_counts},
                          {"partitions", settings.partitions},
                          {"compressions", settings.compressions},
                          {"generated",
                           {{"bytes", settings.generated.bytes},
                            {"files", settings.generated.files},
                            {"mean_record_bytes", settings.generated.mean_record_bytes},
                            {"chunk_bytes", settings.generated.chunk_bytes}}}};
  nlohmann::json set_list = nlohmann::json::array();
  for (const auto& set : sets) {
    set_list.push_back({{"name", set.name},
                        {"compression", set.compression},
                        {"files", set.files},
                        {"file_bytes", set.facts.file_bytes},
                        {"records", set.facts.records},
                        {"chunks", set.facts.chunks}});
  }
  document["sets"] = std::move(set_list);
  nlohmann::json results = nlohmann::json::array();
  std::int64_t wrong = 0;
  RowSet generic{{"set", "compression", "mode", "ranks"}, "ms", "ranks", "set", {}};
  for (const auto& row : rows) {
    wrong += row.wrong;
    Row labelled{{{"set", row.what.set},
                  {"compression", row.what.compression},
                  {"mode", row.what.mode},
                  {"ranks", row.what.ranks}},
                 {}};
    for (const double seconds : row.samples) labelled.samples.push_back(seconds * 1e3);
    generic.rows.push_back(std::move(labelled));
    results.push_back({{"set", row.what.set},
                       {"compression", row.what.compression},
                       {"ranks", row.what.ranks},
                       {"mode", row.what.mode},
                       {"file_bytes", row.file_bytes},
                       {"records", row.records},
                       {"record_bytes", row.record_bytes},
                       {"time_ms", to_json(row.seconds, 1e3)},
                       {"records_per_s", row.records_per_second},
                       {"file_mbps", row.file_mbps},
                       {"record_mbps", row.record_mbps},
                       {"vs_raw", row.vs_raw ? nlohmann::json(*row.vs_raw) : nlohmann::json()},
                       {"vs_crc", row.vs_crc ? nlohmann::json(*row.vs_crc) : nlohmann::json()},
                       {"wrong", row.wrong}});
  }
  document["results"] = std::move(results);
  document["rows"] = to_json(generic);
  const auto worst = worst_uncompressed_ratio(rows);
  document["target"] = {
      {"min_uncompressed_vs_raw", kDataTargetRatio},
      {"worst_uncompressed_vs_raw", worst ? nlohmann::json(*worst) : nlohmann::json()},
      {"met", worst ? nlohmann::json(*worst >= kDataTargetRatio) : nlohmann::json()}};
  document["wrong"] = wrong;
  return document;
}

}  // namespace gradwire::bench
