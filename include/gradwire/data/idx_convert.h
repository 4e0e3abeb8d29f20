// Converting an IDX image/label pair (MNIST, Fashion-MNIST) to RecordIO image records
// (image_records.h): what `gradwire-recordio convert` does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gradwire/data/recordio_writer.h"

namespace gradwire::data {

struct ConvertOptions {
  // Records per chunk. Default 1024 (about 800 KiB of 28x28 images).
  uint32_t records_per_chunk = 1024;
  Compression compression = Compression::kNone;
  // Number of output files; records are split into contiguous runs of (almost) equal length.
  // Default 1.
  int files = 1;
};

struct ConvertSummary {
  std::vector<RecordFileSummary> files;
  uint64_t records = 0;
  uint32_t rows = 0;
  uint32_t cols = 0;
};

// "PREFIX-00001-of-00004.gwrio": the name of output file `index` of `count`.
std::string shard_file_name(const std::string& prefix, int index, int count);

// Reads IDX images (N x rows x cols bytes) and labels (N bytes), gzipped or not, and writes
// options.files RecordIO files named by shard_file_name. Throws InvalidArgument naming the file
// when the inputs are malformed or disagree (different N, images larger than 65535 pixels a side).
ConvertSummary convert_idx_to_recordio(const std::string& images_path,
                                       const std::string& labels_path,
                                       const std::string& out_prefix,
                                       const ConvertOptions& options);

}  // namespace gradwire::data
