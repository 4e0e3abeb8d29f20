// RecordWriter: writes one RecordIO file (docs/formats/recordio.md): records are gathered into
// chunks, each chunk written with its header and checksum once it is full, and close() appends
// the index and the footer. A file without its footer (writer killed) is reported as truncated
// by the readers.
//
// Not thread safe: one writer, one thread. Calls block on file I/O. I/O failures throw
// InvalidArgument (cannot create the file) or BackendError (a write failed), naming the path.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gradwire::data {

// How each chunk's records are stored.
enum class Compression : uint8_t { kNone = 0, kZstd = 1 };
const char* to_string(Compression compression);
// "none" or "zstd"; nullopt otherwise.
std::optional<Compression> parse_compression(std::string_view text);

struct RecordWriterOptions {
  // A chunk is written once its body (4 bytes per record + the records) reaches this many bytes.
  // Default 1 MiB. A single larger record makes a chunk of its own.
  uint64_t chunk_bytes = uint64_t{1} << 20;
  // Also write a chunk after this many records; 0 (default) means no record limit.
  uint32_t records_per_chunk = 0;
  // Per-chunk compression. Default none.
  Compression compression = Compression::kNone;
  // zstd level when compression is kZstd (1..19). Default 3.
  int zstd_level = 3;
};

// What a closed file holds.
struct RecordFileSummary {
  std::string path;
  uint64_t chunks = 0;
  uint64_t records = 0;
  uint64_t file_bytes = 0;
};

class RecordWriter {
 public:
  // Creates (truncates) `path` and writes the file header.
  explicit RecordWriter(std::string path, RecordWriterOptions options = {});
  // Closes the file if close() was not called; errors are swallowed there, so call close().
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  void write(std::string_view record);
  // Writes the pending records as a chunk now (no-op when none are pending).
  void flush_chunk();
  // Writes the last chunk, the index and the footer, and closes the file. Idempotent.
  RecordFileSummary close();

  uint64_t records_written() const { return records_; }

 private:
  struct Open;  // the file, the chunk being gathered and the index so far; null once closed
  void append(std::string_view bytes);

  std::string path_;
  RecordWriterOptions options_;
  std::unique_ptr<Open> open_;
  uint64_t offset_ = 0;
  uint64_t records_ = 0;
  RecordFileSummary summary_;
};

}  // namespace gradwire::data
