// How `gradwire-bench data` presents its measurements: rows (one per measurement of a sweep,
// pooled over repeats), the loader-to-raw ratios, the text table (rank 0's stdout) and the JSON
// document. Pure formatting and arithmetic; the measuring is in data_bench.cpp.
//
// Rates use the median (p50) epoch time, the slowest rank's time for each epoch:
//   records/s   records delivered by all ranks / p50
//   MB/s        file bytes read by all ranks / p50 (1 MB = 1e6 bytes); the raw read's rate is the
//               I/O limit of the same files at the same rank count
//   data MB/s   record payload delivered / p50 (above MB/s when the files are compressed)
//   vs raw      raw p50 / this row's p50 (same set, compression and rank count); raw+crc rows
//               show what the checksum alone costs
//   vs crc      raw+crc p50 / this row's p50, loader rows: how close the loader is to the floor of
//               a reader that verifies every byte
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cases/data_bench_files.h"
#include "cases/data_bench_settings.h"
#include "harness/report.h"
#include "harness/stats.h"

namespace gradwire::bench {

// The loader's target (docs/benchmarks.md, "gradwire-bench data"): the uncompressed loader delivers
// at least half the raw rate.
inline constexpr double kDataTargetRatio = 0.5;

// One measurement.
struct DataRow {
  DataCase what;
  std::uint64_t file_bytes = 0;    // read per epoch by all ranks together
  std::uint64_t records = 0;       // delivered per epoch by all ranks (0 for raw)
  std::uint64_t record_bytes = 0;  // payload delivered per epoch (0 for raw)
  Summary seconds;                 // per epoch, the slowest rank's time
  std::vector<double> samples;     // those times, in seconds, in order
  double records_per_second = 0;
  double file_mbps = 0;
  double record_mbps = 0;
  std::optional<double> vs_raw;  // loader rows, once attach_raw_ratios found their raw row
  std::optional<double> vs_crc;  // static/dynamic rows with a raw+crc row
  std::int64_t wrong = 0;        // epochs whose record count differed from the files' count
};

// Pure: a row from its per-epoch seconds (at least one; throws InvalidArgument otherwise).
DataRow make_data_row(const DataCase& what, std::uint64_t file_bytes, std::uint64_t records,
                      std::uint64_t record_bytes, const std::vector<double>& seconds,
                      std::int64_t wrong);

// Pure: sets vs_raw of every non-raw row whose raw row (same set, compression, ranks) exists,
// and vs_crc of every static/dynamic row whose raw+crc row exists.
void attach_raw_ratios(std::vector<DataRow>& rows);

// Pure: the smallest vs_raw among uncompressed loader (static, dynamic) rows; nullopt when none.
std::optional<double> worst_uncompressed_ratio(const std::vector<DataRow>& rows);

// A file set as measured.
struct DataSetReport {
  std::string name;
  std::string compression;
  std::size_t files = 0;
  FileSetFacts facts;
};

void print_data_header(std::ostream& out, const RunMetadata& metadata,
                       const DataSettings& settings);
// The table of all rows, the file sets, and the target line.
void print_data_table(std::ostream& out, const std::vector<DataSetReport>& sets,
                      const std::vector<DataRow>& rows);

// The whole --json document (schema in docs/benchmarks.md), with the generic rows
// (harness/rows.h): labels set, compression, mode and ranks; samples in milliseconds.
nlohmann::json data_document(const RunMetadata& metadata, const DataSettings& settings,
                             const std::vector<DataSetReport>& sets,
                             const std::vector<DataRow>& rows);

}  // namespace gradwire::bench
