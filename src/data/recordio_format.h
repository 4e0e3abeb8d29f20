// RecordIO framing: pure functions that build and parse the bytes of a RecordIO file (chunk
// headers, chunk bodies, the trailing index and the footer). No file I/O here; the writer and
// readers (recordio_writer.cpp, chunk_file.cpp) do that. The layout is specified in
// docs/formats/recordio.md. All integers are little-endian.
//
// Parsing never throws on damaged bytes: it returns a Parsed<T> whose `problem` says what is wrong
// (an expected outcome, docs/errors.md). The callers add the file, chunk and byte offset.
// Everything here is stateless and thread safe, except ChunkBuilder (one owner at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gradwire/data/recordio_inspect.h"  // crc32_of
#include "gradwire/data/recordio_writer.h"   // Compression

namespace gradwire::data {

// Version 2: CRC-32C checksums (version 1 used zlib's CRC-32; readers refuse it).
constexpr uint8_t kRecordIoVersion = 2;
constexpr size_t kFileHeaderSize = 8;    // "GWRECIO" + version byte
constexpr size_t kChunkHeaderSize = 40;  // see ChunkHeader
constexpr size_t kIndexEntrySize = 16;   // u64 chunk offset, u32 record count, u32 zero
constexpr size_t kFooterSize = 40;       // see Footer
// Largest chunk body (records + length table) a reader accepts; protects allocation from a
// damaged size field that passed its CRC by chance.
constexpr uint64_t kMaxChunkBodyBytes = uint64_t{1} << 31;

// The fixed part in front of every chunk.
struct ChunkHeader {
  Compression compression = Compression::kNone;
  uint32_t record_count = 0;
  uint32_t stored_crc = 0;   // CRC-32C of the stored (possibly compressed) body
  uint64_t body_size = 0;    // body bytes before compression: 4 * record_count + payload
  uint64_t stored_size = 0;  // body bytes as stored in the file
  // Total bytes of the chunk in the file.
  uint64_t chunk_size() const { return kChunkHeaderSize + stored_size; }
};

// The last kFooterSize bytes of a file: where the index is and what it holds.
struct Footer {
  uint64_t index_offset = 0;
  uint64_t chunk_count = 0;
  uint64_t record_count = 0;
  uint32_t index_crc = 0;  // CRC-32C of the index bytes
};

// One index entry per chunk, in file order.
struct IndexEntry {
  uint64_t offset = 0;  // byte offset of the chunk header in the file
  uint32_t record_count = 0;
  bool operator==(const IndexEntry& other) const {
    return offset == other.offset && record_count == other.record_count;
  }
};

// A value or the reason there is none.
template <typename T>
struct Parsed {
  std::optional<T> value;
  std::string problem;  // empty when value is set
  explicit operator bool() const { return value.has_value(); }
};

// The records of one chunk, decoded. record(i) views the chunk's bytes(): its own `body`, or,
// for an uncompressed chunk read through a memory map (RecordReaderOptions::map_file), the
// mapped file itself, kept alive by `owner`. Either way a record lives as long as the chunk.
struct DecodedChunk {
  std::string body;                     // length table + payload, uncompressed, when owned
  std::vector<uint64_t> record_starts;  // size() + 1 offsets into bytes()
  std::string_view viewed;              // the bytes when they are not owned (owner set)
  std::shared_ptr<const void> owner;    // keeps `viewed` alive; null when `body` holds the bytes
  std::string_view bytes() const { return owner ? viewed : std::string_view(body); }
  size_t size() const { return record_starts.empty() ? 0 : record_starts.size() - 1; }
  // Precondition: i < size().
  std::string_view record(size_t i) const {
    const char* base = owner ? viewed.data() : body.data();
    return std::string_view(base + record_starts[i], record_starts[i + 1] - record_starts[i]);
  }
};

// Collects records for one chunk and encodes it. Not thread safe.
class ChunkBuilder {
 public:
  void add(std::string_view record);
  size_t record_count() const { return lengths_.size(); }
  // Body bytes so far (length table + payload), before compression.
  uint64_t body_size() const { return 4 * lengths_.size() + payload_.size(); }
  bool empty() const { return lengths_.empty(); }
  // The complete chunk (header + stored body). Does not clear the builder.
  std::string encode(Compression compression, int zstd_level = 3) const;
  void clear();

 private:
  std::vector<uint32_t> lengths_;
  std::string payload_;
};

std::string encode_file_header();
// The format version byte of a file header when `bytes` start with the RecordIO magic; else
// nullopt.
std::optional<uint8_t> file_header_version(std::string_view bytes);
// Empty when `bytes` start with a valid file header, else the problem.
std::string check_file_header(std::string_view bytes);

std::string encode_chunk_header(const ChunkHeader& header);
// Needs at least kChunkHeaderSize bytes; checks magic, version, header CRC, compression and
// sizes.
Parsed<ChunkHeader> parse_chunk_header(std::string_view bytes);
// Checks the stored CRC, decompresses and splits the body into records.
Parsed<DecodedChunk> decode_chunk_body(const ChunkHeader& header, std::string_view stored);
// The same without copying: an uncompressed body is moved out of `stored` into the chunk; a zstd
// body is decompressed into `reuse`'s memory (a chunk no longer needed, or {}), leaving `stored`
// as it was. On a problem `stored` may have been moved from. `stored_crc`: the CRC-32C of
// `stored` when the caller computed it already (a reader does so piece by piece while the bytes
// are still in the CPU cache); nullopt computes it here.
Parsed<DecodedChunk> decode_chunk_body(const ChunkHeader& header, std::string& stored,
                                       DecodedChunk reuse,
                                       std::optional<uint32_t> stored_crc = std::nullopt);

// The same for stored bytes that stay where they are and outlive the chunk while `owner` lives (a
// reader's memory map of the file): an uncompressed chunk views `stored` and shares `owner`
// instead of copying; a zstd body is decompressed from `stored` into `reuse`'s memory.
Parsed<DecodedChunk> decode_chunk_body_in_place(const ChunkHeader& header, std::string_view stored,
                                                std::shared_ptr<const void> owner,
                                                DecodedChunk reuse,
                                                std::optional<uint32_t> stored_crc = std::nullopt);

std::string encode_index(const std::vector<IndexEntry>& entries);
Parsed<std::vector<IndexEntry>> parse_index(std::string_view bytes, const Footer& footer);

std::string encode_footer(const Footer& footer);
// Needs exactly kFooterSize bytes; checks magic, version and the footer's own CRC.
Parsed<Footer> parse_footer(std::string_view bytes);

}  // namespace gradwire::data
