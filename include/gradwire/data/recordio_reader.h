// RecordFileReader: reads one RecordIO file (docs/formats/recordio.md): sequentially, record by
// record, or any chunk by its index number.
//
// Damage (a bad CRC, a truncated file, an index that disagrees with the chunks) is described by a
// ChunkDamage naming the file, the chunk and the byte offset. By default it is thrown as a
// CorruptRecordsError; with RecordReaderOptions::skip_corrupt the damaged chunk is skipped and
// counted in stats(). try_read_chunk() returns damage as a value in either mode.
//
// Opening checks the format version (a file of another version is refused with
// InvalidArgument naming the file and both versions), then reads the footer and the index. If they
// are missing or damaged (a truncated file), the reader walks the chunk headers from the start of
// the file to find what is intact: without skip_corrupt that is an error naming the first chunk it
// could not read; with it, the intact chunks stay readable and open_damage() says what was lost.
//
// Reading: by default the file is memory-mapped (RecordReaderOptions::map_file): chunks are
// checked where they lie in the page cache and uncompressed ones are handed out in place, without
// a copy; otherwise, or when the file cannot be mapped, chunks are read with pread into memory
// reused from chunk to chunk. Either way every byte handed out passed its chunk's CRC-32C.
//
// Thread safety: chunks(), read_chunk(), try_read_chunk() and read_chunk_header() are const and
// may be called from several threads at once (positional reads). The sequential calls
// (seek_to_chunk, next_record, stats) need one thread at a time. All calls block on file I/O;
// I/O failures (not damage) throw InvalidArgument (cannot open) or BackendError.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gradwire/common/error.h"
#include "gradwire/data/recordio_format.h"

namespace gradwire::data {

namespace detail {
class MappedFile;
}

// Where and what the damage is.
struct ChunkDamage {
  std::string file;
  std::optional<uint64_t> chunk;  // nullopt: damage outside any chunk (footer, index)
  uint64_t byte_offset = 0;       // where the damaged structure starts in the file
  std::string problem;
  // Records lost with it; nullopt when unknown (header unreadable, or file tail lost).
  std::optional<uint64_t> records_lost;
  // "FILE: chunk C at byte B: PROBLEM"
  std::string describe() const;
};

// Thrown for damaged input when skipping is off: a gradwire::CorruptDataError whose damage()
// names the file, chunk and byte offset.
class CorruptRecordsError : public CorruptDataError {
 public:
  explicit CorruptRecordsError(ChunkDamage damage);
  const ChunkDamage& damage() const { return damage_; }

 private:
  ChunkDamage damage_;
};

struct RecordReaderOptions {
  // Skip damaged chunks (counting them in stats()) instead of throwing. Default false.
  bool skip_corrupt = false;
  // Read through a read-only memory map of the file: no copy out of the page cache, and
  // uncompressed records view the mapping (DecodedChunk::owner keeps it alive). Default true.
  // Turn it off for files that may be truncated or rewritten while being read: truncating a
  // mapped file makes touching the lost bytes raise SIGBUS, and bytes rewritten in place after
  // their chunk was checked are seen as they are now. Files that cannot be mapped are read with
  // pread either way.
  bool map_file = true;
};

// What was read and what was skipped so far.
struct ReadStats {
  uint64_t chunks_read = 0;
  uint64_t records_read = 0;
  uint64_t chunks_skipped = 0;
  uint64_t records_skipped = 0;  // known losses only (see ChunkDamage::records_lost)
  std::vector<ChunkDamage> damages;
  void add_skipped(const ChunkDamage& damage);
};

// A chunk or the damage that stopped it.
struct ChunkRead {
  std::optional<DecodedChunk> chunk;
  std::optional<ChunkDamage> damage;
};

// Memory for reading chunks, recycled from chunks no longer needed, so that reading chunk after
// chunk allocates and zero-fills nothing once the buffers have grown to the chunk size. One per
// reading thread; ShardedRecordReader and next_record() keep their own.
struct ChunkBuffers {
  DecodedChunk recycled;  // a finished chunk or {}: its body and record table are reused
  std::string stored;     // compressed chunk bytes between reading and decompressing
};

class RecordFileReader {
 public:
  explicit RecordFileReader(std::string path, RecordReaderOptions options = {});
  ~RecordFileReader();
  RecordFileReader(const RecordFileReader&) = delete;
  RecordFileReader& operator=(const RecordFileReader&) = delete;

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return file_size_; }
  // The index (recovered by walking the chunks when the file's own index is lost).
  const std::vector<IndexEntry>& chunks() const { return index_; }
  uint64_t record_count() const { return record_count_; }
  // Damage found when opening (only with skip_corrupt; otherwise the constructor threw it).
  const std::optional<ChunkDamage>& open_damage() const { return open_damage_; }
  // True when chunks are read through a memory map (RecordReaderOptions::map_file and the file
  // could be mapped).
  bool mapped() const { return mapping_ != nullptr; }

  Parsed<ChunkHeader> read_chunk_header(size_t chunk) const;
  ChunkRead try_read_chunk(size_t chunk) const;
  // The same, reading into the memory of `buffers` (the returned chunk takes buffers.recycled's
  // memory; the call leaves buffers.recycled empty). An uncompressed body is read once into its
  // final place (no copy), or, when mapped(), not copied at all.
  ChunkRead try_read_chunk(size_t chunk, ChunkBuffers& buffers) const;
  // Throws CorruptRecordsError on damage (whatever skip_corrupt says).
  DecodedChunk read_chunk(size_t chunk) const;

  // Sequential reading: the next record goes from chunk `chunk`, record 0.
  void seek_to_chunk(size_t chunk);
  // The next record, or nullopt at the end of the file. The view stays valid until the next call
  // of next_record() or seek_to_chunk(). Damaged chunks throw or are skipped (skip_corrupt).
  std::optional<std::string_view> next_record();
  const ReadStats& stats() const { return stats_; }

 private:
  // Reads exactly `size` bytes at `offset` into `out` (resized to the bytes read, its memory
  // reused); fewer only at the end of the file. With `crc`, also the CRC-32C of the bytes read,
  // computed piece by piece right after each piece arrives, while it is in the CPU cache.
  void read_into(uint64_t offset, uint64_t size, std::string& out, uint32_t* crc = nullptr) const;
  std::string read_at(uint64_t offset, uint64_t size) const;
  // mapped(): the bytes [offset, offset + size) of the mapping, cut at the end of the file.
  std::string_view mapped_bytes(uint64_t offset, uint64_t size) const;
  std::optional<ChunkDamage> load_index();
  ChunkDamage recover_index_by_walking(const std::string& why);
  ChunkDamage damage_at(std::optional<uint64_t> chunk, uint64_t offset, std::string problem,
                        std::optional<uint64_t> records_lost) const;

  std::string path_;
  RecordReaderOptions options_;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  std::shared_ptr<const detail::MappedFile> mapping_;  // null: read with pread
  uint64_t chunk_area_end_ = 0;  // where the index starts (or the end of the last intact chunk)
  std::vector<IndexEntry> index_;
  uint64_t record_count_ = 0;
  std::optional<ChunkDamage> open_damage_;

  // Sequential state.
  ChunkBuffers buffers_;
  size_t next_chunk_ = 0;
  std::optional<DecodedChunk> current_;
  size_t next_in_current_ = 0;
  ReadStats stats_;
};

}  // namespace gradwire::data
