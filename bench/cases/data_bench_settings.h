// What `gradwire-bench data` runs: its command-line flags, the presets, the settings they resolve
// to, and the list of measurements a sweep makes (pure, unit-tested).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/options.h"

namespace gradwire::bench {

// Where a data set's files come from.
enum class DataSource {
  kFashionMnist,  // converted from the IDX files (once per compression)
  kDirectory,     // --data DIR: its *.gwrio files, read as they are
  kGenerated,     // written by the benchmark (once per compression)
};

struct DataSetSpec {
  std::string name;  // "fashion-mnist", "data" (--data) or "generated"
  DataSource source = DataSource::kGenerated;
  std::string directory;  // kDirectory only
};

struct GeneratedSpec {
  std::uint64_t bytes = 0;              // record payload in total
  int files = 1;                        // equal shares of the records
  std::uint64_t mean_record_bytes = 0;  // sizes uniform in [mean/2, 3*mean/2]
  std::uint64_t chunk_bytes = 0;        // RecordWriterOptions::chunk_bytes
};

// What runs; the defaults are the default preset's (data_options() has the others', and the
// generated set's).
struct DataSettings {
  std::string preset = "default";
  std::vector<DataSetSpec> sets;
  GeneratedSpec generated;
  int fashion_mnist_files = 4;
  std::uint32_t fashion_mnist_records_per_chunk = 1024;
  std::vector<std::string> compressions;  // "none" before "zstd"
  std::vector<int> rank_counts = {1, 2};  // ascending
  std::vector<std::string> partitions;    // "static" before "dynamic"
  int epochs = 5;
  int warmup = 1;
  int repeat = 1;
  int prefetch = 4;
  std::optional<std::string> data_dir;  // --data: RecordIO files to read instead of Fashion-MNIST
  std::optional<std::string> scratch_dir;  // where converted/generated files go (kept)
  std::string json_path;                   // empty: no JSON
};

// The flags, their help and their defaults in each preset:
//   default: generated set 256 MiB in 8 files of 4 KiB (mean) records; 1 warm-up + 5 timed
//            epochs per measurement; 1 sweep
//   quick:   generated set 32 MiB in 4 files; 1 warm-up + 2 timed epochs
// Both: Fashion-MNIST's 60000 training images (47 MB) converted in 4 files of 1024-image chunks,
// prefetch 4 chunks, compressions none and zstd, 1 and 2 ranks, static and dynamic partitions.
OptionTable<DataSettings> data_options();

// Pure. Throws InvalidArgument for malformed sizes, --generated-files below 1, --record-bytes
// below 2, less than one record per generated file, or rank counts above max_ranks.
DataSettings resolve_data_settings(const OptionTable<DataSettings>& options, int max_ranks);

// The largest rank count a sweep uses (the ranks gradwire-bench must start).
int data_world_size(const DataSettings& settings);

// One measurement of a sweep: the raw read of a file set, or the loader over it.
struct DataCase {
  std::string set;
  std::string compression;  // "none"/"zstd"; a --data set: "as-is"
  int ranks = 1;
  std::string mode;  // "raw", "raw+crc", "static" or "dynamic"
};

// Pure: the measurements of one sweep, in the order they run: for each set, compression and rank
// count, the raw read first, then the raw read with CRC-32, then each partition. A --data set gets
// one compression, "as-is".
std::vector<DataCase> data_cases(const DataSettings& settings);

}  // namespace gradwire::bench
