// gradwire-recordio: RecordIO files from the command line (docs/data.md,
// docs/formats/recordio.md).
//
//   gradwire-recordio convert IDX_IMAGES IDX_LABELS OUT_PREFIX [--records-per-chunk N]
//                     [--compress zstd|none] [--files K]
//   gradwire-recordio inspect [--brief] FILE...
//   gradwire-recordio verify FILE...
//
// Exit status: 0 on success (verify: every file intact); 1 when a file is damaged or cannot be
// read (each problem is printed with its file, chunk and byte offset); 2 for usage errors.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "gradwire/common/error.h"
#include "gradwire/common/files.h"
#include "gradwire/data/idx_convert.h"
#include "gradwire/data/recordio_inspect.h"

namespace {

using namespace gradwire::data;

constexpr int kDamaged = 1;
constexpr int kUsageError = 2;

int run_convert(const std::string& images, const std::string& labels, const std::string& prefix,
                const ConvertOptions& options) {
  gradwire::prepare_output_file(prefix,
                                "RecordIO output");  // creates data/fashion/ for data/fashion/test
  const ConvertSummary summary = convert_idx_to_recordio(images, labels, prefix, options);
  for (const RecordFileSummary& file : summary.files) {
    std::printf("wrote %s: %llu records in %llu chunks, %llu bytes\n", file.path.c_str(),
                static_cast<unsigned long long>(file.records),
                static_cast<unsigned long long>(file.chunks),
                static_cast<unsigned long long>(file.file_bytes));
  }
  std::printf("converted %llu images of %ux%u (%s)\n",
              static_cast<unsigned long long>(summary.records), summary.rows, summary.cols,
              to_string(options.compression));
  return 0;
}

void print_damages(const FileInspection& inspection) {
  for (const ChunkDamage& damage : inspection.damages) {
    std::printf("DAMAGED %s", damage.describe().c_str());
    if (damage.records_lost) {
      std::printf(" (%llu records)", static_cast<unsigned long long>(*damage.records_lost));
    }
    std::printf("\n");
  }
}

int run_inspect(const std::vector<std::string>& files, bool brief) {
  int status = 0;
  for (const std::string& path : files) {
    const FileInspection inspection = inspect_record_file(path, /*verify=*/false);
    uint64_t body = 0, stored = 0;
    for (const ChunkSummary& chunk : inspection.chunks) {
      body += chunk.body_bytes;
      stored += chunk.stored_bytes;
    }
    std::printf(
        "%s: %zu chunks, %llu records, %llu bytes (record bodies %llu bytes, stored %llu)\n",
        path.c_str(), inspection.chunks.size(), static_cast<unsigned long long>(inspection.records),
        static_cast<unsigned long long>(inspection.file_bytes),
        static_cast<unsigned long long>(body), static_cast<unsigned long long>(stored));
    if (!brief) {
      std::printf("  %6s %12s %8s %-5s %12s %12s\n", "chunk", "offset", "records", "comp",
                  "body_bytes", "stored_bytes");
      for (size_t i = 0; i < inspection.chunks.size(); ++i) {
        const ChunkSummary& chunk = inspection.chunks[i];
        std::printf("  %6zu %12llu %8u %-5s %12llu %12llu\n", i,
                    static_cast<unsigned long long>(chunk.offset), chunk.records,
                    to_string(chunk.compression), static_cast<unsigned long long>(chunk.body_bytes),
                    static_cast<unsigned long long>(chunk.stored_bytes));
      }
    }
    print_damages(inspection);
    if (!inspection.damages.empty()) status = kDamaged;
  }
  return status;
}

int run_verify(const std::vector<std::string>& files) {
  int status = 0;
  for (const std::string& path : files) {
    const FileInspection inspection = inspect_record_file(path, /*verify=*/true);
    print_damages(inspection);
    if (inspection.damages.empty()) {
      std::printf("OK %s: %zu chunks, %llu records, every CRC matches\n", path.c_str(),
                  inspection.chunks.size(), static_cast<unsigned long long>(inspection.records));
    } else {
      std::printf("FAILED %s: %zu problem(s)\n", path.c_str(), inspection.damages.size());
      status = kDamaged;
    }
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "gradwire-recordio: convert IDX data to RecordIO, inspect and verify RecordIO files"};
  app.require_subcommand(1);

  std::string images, labels, prefix, compression = "none";
  ConvertOptions convert_options;
  auto* convert = app.add_subcommand("convert", "Convert an IDX image/label pair (gzip or not)");
  convert->add_option("IDX_IMAGES", images, "IDX images, e.g. train-images-idx3-ubyte.gz")
      ->required();
  convert->add_option("IDX_LABELS", labels, "IDX labels, e.g. train-labels-idx1-ubyte.gz")
      ->required();
  convert->add_option("OUT_PREFIX", prefix, "Output files are OUT_PREFIX-NNNNN-of-KKKKK.gwrio")
      ->required();
  convert->add_option("--records-per-chunk", convert_options.records_per_chunk, "Records per chunk")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  convert->add_option("--compress", compression, "Per-chunk compression")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "zstd"}));
  convert->add_option("--files", convert_options.files, "Number of output files")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);

  std::vector<std::string> inspect_files, verify_files;
  bool brief = false;
  auto* inspect = app.add_subcommand("inspect", "Chunks, records, sizes and compression of files");
  inspect->add_option("FILE", inspect_files, "RecordIO files")->required();
  inspect->add_flag("--brief", brief, "One line per file, no chunk table");
  auto* verify = app.add_subcommand("verify", "Check every CRC; exit 1 on damage");
  verify->add_option("FILE", verify_files, "RecordIO files")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kUsageError;
  }
  try {
    if (*convert) {
      convert_options.compression = *parse_compression(compression);
      return run_convert(images, labels, prefix, convert_options);
    }
    if (*inspect) return run_inspect(inspect_files, brief);
    return run_verify(verify_files);
  } catch (const gradwire::Error& e) {
    std::fprintf(stderr, "gradwire-recordio: %s\n", e.what());
    return kDamaged;
  }
}
