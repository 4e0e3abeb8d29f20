// Test helpers: temporary directories and small RecordIO files with known records.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "gradwire/data/recordio_writer.h"

namespace gradwire::data::testing {

// A fresh directory under the system temp dir, removed when the object goes.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// "file F record R" padded to a few dozen bytes: easy to check, distinct everywhere.
std::string test_record(int file, uint64_t record);

// Writes `records` records (test_record(file, i)) into `path`, `per_chunk` per chunk.
RecordFileSummary write_test_file(const std::string& path, int file, uint64_t records,
                                  uint32_t per_chunk, Compression compression = Compression::kNone);

std::string read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::string& bytes);

}  // namespace gradwire::data::testing
