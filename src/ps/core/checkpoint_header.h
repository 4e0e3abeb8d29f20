// The JSON header of a checkpoint file and the file's fixed layout (internal to checkpoint.cpp;
// docs/formats/ps-checkpoint.md). Pure: strings in, values out.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gradwire/common/error.h"
#include "gradwire/ps/table.h"

namespace gradwire::ps::checkpoint_format {

constexpr char kMagic[8] = {'G', 'W', 'P', 'S', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 1;
constexpr int64_t kVersionOffset = 8;
constexpr int64_t kHeaderLengthOffset = 12;
constexpr int64_t kHeaderOffset = 20;  // magic (8) + version (u32) + header length (u64)
constexpr int64_t kTrailerBytes = 4;   // CRC-32
constexpr int64_t kMinFileBytes = kHeaderOffset + kTrailerBytes;
// The longest header a reader accepts, checked before anything is allocated for it. Headers are
// a few hundred bytes (a table config and up to three tensor entries); a longer length field is
// damage or another program's file.
constexpr int64_t kMaxHeaderBytes = int64_t{1} << 20;

// One tensor of the data region: `length` bytes at `offset` from the region's start.
struct TensorEntry {
  std::string name;
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> shape;
  int64_t offset = 0;
  int64_t length = 0;
};

struct Header {
  TableConfig config;
  int server_index = 0;
  int num_servers = 1;
  int64_t step = 0;
  int64_t data_bytes = 0;  // the data region's length: the entries tile it in order
  std::vector<TensorEntry> tensors;
};

// A layout problem found at byte `offset` of the file; `truncated` when the file is shorter
// than what it declares.
class FormatError : public Error {
 public:
  FormatError(int64_t offset, const std::string& what, bool truncated = false)
      : Error(what), offset_(offset), truncated_(truncated) {}
  int64_t offset() const { return offset_; }
  bool truncated() const { return truncated_; }

 private:
  int64_t offset_;
  bool truncated_;
};

// "float32" / "int64" (the dtypes a checkpoint may hold); InvalidArgument for others.
const char* dtype_name(at::ScalarType dtype);

std::string encode_header(const Header& header);

// Parses and checks a header of `file_bytes` total (call it only on bytes whose CRC matched,
// Note [header before CRC] in checkpoint.cpp): fields present and typed, enums known,
// tensor entries whose shapes, dtypes and lengths agree, tiling [0, data_bytes) in order, no
// data_bytes beyond what the file can hold. FormatError with the file offset otherwise.
Header decode_header(std::string_view json, int64_t file_bytes);

}  // namespace gradwire::ps::checkpoint_format
