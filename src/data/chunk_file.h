// ChunkFile: one RecordIO file (docs/formats/recordio.md) opened for reading chunk by chunk, by
// index number. The public RecordFileReader reads records sequentially through it;
// ShardedRecordReader reads chunks of many files through it on its background thread.
//
// Damage (a bad CRC, a truncated file, an index that disagrees with the chunks) is described by a
// ChunkDamage naming the file, the chunk and the byte offset. try_read_chunk() returns it as a
// value; read_chunk() throws it as a CorruptRecordsError.
//
// Opening checks the format version (a file of another version is refused with
// InvalidArgument naming the file and both versions), then reads the footer and the index. If they
// are missing or damaged (a truncated file), the file's chunk headers are walked from the start to
// find what is intact: without skip_corrupt that is an error naming the first chunk that could not
// be read; with it, the intact chunks stay readable and open_damage() says what was lost.
//
// Reading: by default the file is memory-mapped (RecordReaderOptions::map_file): chunks are
// checked where they lie in the page cache and uncompressed ones are handed out in place, without
// a copy; otherwise, or when the file cannot be mapped, chunks are read with pread into memory
// reused from chunk to chunk. Either way every byte handed out passed its chunk's CRC-32C.
//
// Thread safety: every method is const and may be called from several threads at once
// (positional reads). All calls block on file I/O; I/O failures (not damage) throw
// InvalidArgument (cannot open) or BackendError.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gradwire/common/files.h"
#include "gradwire/data/recordio_reader.h"
#include "recordio_format.h"

namespace gradwire::data {

namespace detail {
class MappedFile;
}

// A chunk or the damage that stopped it.
struct ChunkRead {
  std::optional<DecodedChunk> chunk;
  std::optional<ChunkDamage> damage;
};

// Memory for reading chunks, recycled from chunks no longer needed, so that reading chunk after
// chunk allocates and zero-fills nothing once the buffers have grown to the chunk size. One per
// reading thread.
struct ChunkBuffers {
  DecodedChunk recycled;  // a finished chunk or {}: its body and record table are reused
  std::string stored;     // compressed chunk bytes between reading and decompressing
};

class ChunkFile {
 public:
  explicit ChunkFile(std::string path, RecordReaderOptions options = {});
  ~ChunkFile();
  ChunkFile(const ChunkFile&) = delete;
  ChunkFile& operator=(const ChunkFile&) = delete;

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
  UniqueFd fd_;
  uint64_t file_size_ = 0;
  std::shared_ptr<const detail::MappedFile> mapping_;  // null: read with pread
  uint64_t chunk_area_end_ = 0;  // where the index starts (or the end of the last intact chunk)
  std::vector<IndexEntry> index_;
  uint64_t record_count_ = 0;
  std::optional<ChunkDamage> open_damage_;
};

}  // namespace gradwire::data
