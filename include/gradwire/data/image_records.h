// Image records and IDX files (the MNIST / Fashion-MNIST layout).
//
// Image record payload (one RecordIO record per image, docs/formats/recordio.md):
//   byte 0     format version (1)
//   byte 1     label (0..255)
//   bytes 2-3  rows, u16 little-endian
//   bytes 4-5  columns, u16 little-endian
//   then       rows * columns pixel bytes, row-major, one unsigned byte per pixel
// decode_image_record() is the function training jobs use to read them back.
//
// All functions are pure or read one file; thread safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gradwire::data {

constexpr uint8_t kImageRecordVersion = 1;
constexpr size_t kImageRecordHeaderSize = 6;

// A decoded image record; `pixels` views the record's bytes.
struct ImageRecord {
  uint8_t label = 0;
  uint16_t rows = 0;
  uint16_t cols = 0;
  std::string_view pixels;
};

// Throws InvalidArgument when pixels.size() != rows * cols.
std::string encode_image_record(uint8_t label, uint16_t rows, uint16_t cols,
                                std::string_view pixels);
// Throws InvalidArgument when `record` is not an image record (wrong version or size).
ImageRecord decode_image_record(std::string_view record);

// An IDX array of unsigned bytes (type code 0x08): dimensions and the data, row-major.
struct IdxArray {
  std::vector<uint32_t> dims;
  std::string data;
  // Product of the dimensions after the first (bytes per item).
  size_t item_size() const;
};

// Parses IDX bytes; `name` (a path) is used in errors. Throws InvalidArgument naming it when the
// magic, type or sizes are wrong.
IdxArray parse_idx(std::string bytes, const std::string& name);
// Reads a whole file, gunzipping it when it is gzip-compressed (zlib's gz* reads either).
// Throws InvalidArgument naming the path when it cannot be read.
std::string read_file_maybe_gzip(const std::string& path);

}  // namespace gradwire::data
