// RecordFileReader: reads one RecordIO file (docs/formats/recordio.md) record by record, from
// its start or from any chunk.
//
// Damage (a bad CRC, a truncated file, an index that disagrees with the chunks) is described by a
// ChunkDamage naming the file, the chunk and the byte offset. By default it is thrown as a
// CorruptRecordsError; with RecordReaderOptions::skip_corrupt the damaged chunk is skipped and
// counted in stats(). Opening refuses a file of another format version (InvalidArgument naming
// the file and both versions); a file whose footer or index is lost (a truncated file) is an
// error naming the first chunk that could not be read, or, with skip_corrupt, its intact chunks
// stay readable and open_damage() says what was lost.
//
// By default the file is memory-mapped (RecordReaderOptions::map_file): chunks are checked where
// they lie in the page cache and uncompressed records are handed out in place, without a copy.
// Either way every byte handed out passed its chunk's CRC-32C. To read a set of files split
// across the ranks of a job, use ShardedRecordReader (sharded_reader.h).
//
// Thread safety: one thread at a time. All calls block on file I/O; I/O failures (not damage)
// throw InvalidArgument (cannot open) or BackendError.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gradwire/common/error.h"

namespace gradwire::data {

class ChunkFile;
struct DecodedChunk;

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
  // uncompressed records view the mapping. Default true.
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

class RecordFileReader {
 public:
  explicit RecordFileReader(std::string path, RecordReaderOptions options = {});
  ~RecordFileReader();
  RecordFileReader(const RecordFileReader&) = delete;
  RecordFileReader& operator=(const RecordFileReader&) = delete;

  const std::string& path() const;
  uint64_t file_size() const;
  uint64_t record_count() const;
  // Chunks in the file (those intact, when the index was lost and skip_corrupt is on).
  size_t chunk_count() const;
  // Damage found when opening (only with skip_corrupt; otherwise the constructor threw it).
  const std::optional<ChunkDamage>& open_damage() const;
  // True when chunks are read through a memory map (RecordReaderOptions::map_file and the file
  // could be mapped).
  bool mapped() const;

  // The next record comes from chunk `chunk`, record 0. Throws InvalidArgument past the end.
  void seek_to_chunk(size_t chunk);
  // The next record, or nullopt at the end of the file. The view stays valid until the next call
  // of next_record() or seek_to_chunk(). Damaged chunks throw or are skipped (skip_corrupt).
  std::optional<std::string_view> next_record();
  const ReadStats& stats() const { return stats_; }

 private:
  struct Cursor;  // the chunk being read and the memory recycled between chunks
  RecordReaderOptions options_;
  std::unique_ptr<const ChunkFile> file_;
  std::unique_ptr<Cursor> cursor_;
  size_t next_chunk_ = 0;
  ReadStats stats_;
};

}  // namespace gradwire::data
