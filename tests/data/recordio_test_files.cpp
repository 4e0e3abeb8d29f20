#include "recordio_test_files.h"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>

namespace gradwire::data::testing {

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("gradwire-data-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string test_record(int file, uint64_t record) {
  std::string text = "file " + std::to_string(file) + " record " + std::to_string(record);
  text.append(record % 7, '.');  // lengths differ
  return text;
}

RecordFileSummary write_test_file(const std::string& path, int file, uint64_t records,
                                  uint32_t per_chunk, Compression compression) {
  RecordWriterOptions options;
  options.records_per_chunk = per_chunk;
  options.compression = compression;
  RecordWriter writer(path, options);
  for (uint64_t i = 0; i < records; ++i) writer.write(test_record(file, i));
  return writer.close();
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace gradwire::data::testing
