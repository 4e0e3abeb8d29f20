#include "gradwire/data/idx_convert.h"

#include <cstdio>

#include "gradwire/common/error.h"
#include "gradwire/data/image_records.h"

namespace gradwire::data {

std::string shard_file_name(const std::string& prefix, int index, int count) {
  char suffix[48];
  std::snprintf(suffix, sizeof(suffix), "-%05d-of-%05d.gwrio", index, count);
  return prefix + suffix;
}

ConvertSummary convert_idx_to_recordio(const std::string& images_path,
                                       const std::string& labels_path,
                                       const std::string& out_prefix,
                                       const ConvertOptions& options) {
  if (options.files < 1 || options.records_per_chunk < 1) {
    throw InvalidArgument("gradwire: convert needs at least one file and one record per chunk");
  }
  const IdxArray images = parse_idx(read_file_maybe_gzip(images_path), images_path);
  const IdxArray labels = parse_idx(read_file_maybe_gzip(labels_path), labels_path);
  if (images.dims.size() != 3) {
    throw InvalidArgument("gradwire: " + images_path + " has " +
                          std::to_string(images.dims.size()) +
                          " dimensions; images need 3 (count, rows, columns)");
  }
  if (labels.dims.size() != 1 || labels.dims[0] != images.dims[0]) {
    throw InvalidArgument("gradwire: " + labels_path + " does not hold one label per image of " +
                          images_path + " (" + std::to_string(images.dims[0]) + " images)");
  }
  if (images.dims[1] > UINT16_MAX || images.dims[2] > UINT16_MAX) {
    throw InvalidArgument("gradwire: images of " + images_path + " are larger than 65535 pixels");
  }
  ConvertSummary summary;
  summary.rows = images.dims[1];
  summary.cols = images.dims[2];
  const uint64_t count = images.dims[0];
  const size_t pixels = images.item_size();
  RecordWriterOptions writer_options;
  writer_options.records_per_chunk = options.records_per_chunk;
  writer_options.chunk_bytes = UINT64_MAX;  // records_per_chunk decides
  writer_options.compression = options.compression;
  for (int f = 0; f < options.files; ++f) {
    const uint64_t begin = count * static_cast<uint64_t>(f) / static_cast<uint64_t>(options.files);
    const uint64_t end =
        count * static_cast<uint64_t>(f + 1) / static_cast<uint64_t>(options.files);
    RecordWriter writer(shard_file_name(out_prefix, f, options.files), writer_options);
    for (uint64_t i = begin; i < end; ++i) {
      writer.write(encode_image_record(static_cast<uint8_t>(labels.data[i]),
                                       static_cast<uint16_t>(summary.rows),
                                       static_cast<uint16_t>(summary.cols),
                                       std::string_view(images.data).substr(i * pixels, pixels)));
    }
    summary.files.push_back(writer.close());
  }
  summary.records = count;
  return summary;
}

}  // namespace gradwire::data
