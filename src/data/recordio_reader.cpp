#include "gradwire/data/recordio_reader.h"

#include "chunk_file.h"

namespace gradwire::data {

std::string ChunkDamage::describe() const {
  std::string where = file + ": ";
  if (chunk) where += "chunk " + std::to_string(*chunk) + " at ";
  where += "byte " + std::to_string(byte_offset) + ": " + problem;
  return where;
}

CorruptRecordsError::CorruptRecordsError(ChunkDamage damage)
    : CorruptDataError("gradwire: damaged RecordIO data: " + damage.describe() +
                       ". Run `gradwire-recordio verify " + damage.file +
                       "` to list every damaged chunk, rewrite the file from its source, or enable "
                       "skip_corrupt (--skip-corrupt) to skip damaged chunks."),
      damage_(std::move(damage)) {}

void ReadStats::add_skipped(const ChunkDamage& damage) {
  ++chunks_skipped;
  records_skipped += damage.records_lost.value_or(0);
  damages.push_back(damage);
}

struct RecordFileReader::Cursor {
  ChunkBuffers buffers;
  std::optional<DecodedChunk> current;
  size_t next_in_current = 0;
};

RecordFileReader::RecordFileReader(std::string path, RecordReaderOptions options)
    : options_(options),
      file_(std::make_unique<const ChunkFile>(std::move(path), options)),
      cursor_(std::make_unique<Cursor>()) {
  if (file_->open_damage()) stats_.add_skipped(*file_->open_damage());
}

RecordFileReader::~RecordFileReader() = default;

const std::string& RecordFileReader::path() const { return file_->path(); }
uint64_t RecordFileReader::file_size() const { return file_->file_size(); }
uint64_t RecordFileReader::record_count() const { return file_->record_count(); }
size_t RecordFileReader::chunk_count() const { return file_->chunks().size(); }
const std::optional<ChunkDamage>& RecordFileReader::open_damage() const {
  return file_->open_damage();
}
bool RecordFileReader::mapped() const { return file_->mapped(); }

void RecordFileReader::seek_to_chunk(size_t chunk) {
  if (chunk > chunk_count()) {
    throw InvalidArgument("gradwire: seek to chunk " + std::to_string(chunk) + " of " + path() +
                          ", which has " + std::to_string(chunk_count()) + " chunks");
  }
  next_chunk_ = chunk;
  cursor_->current.reset();
  cursor_->next_in_current = 0;
}

std::optional<std::string_view> RecordFileReader::next_record() {
  Cursor& cursor = *cursor_;
  while (!cursor.current || cursor.next_in_current >= cursor.current->size()) {
    if (next_chunk_ >= chunk_count()) return std::nullopt;
    if (cursor.current) cursor.buffers.recycled = std::move(*cursor.current);
    ChunkRead read = file_->try_read_chunk(next_chunk_++, cursor.buffers);
    if (read.damage) {
      if (!options_.skip_corrupt) throw CorruptRecordsError(*read.damage);
      stats_.add_skipped(*read.damage);
      cursor.current.reset();
      continue;
    }
    cursor.current = std::move(read.chunk);
    cursor.next_in_current = 0;
    ++stats_.chunks_read;
  }
  ++stats_.records_read;
  return cursor.current->record(cursor.next_in_current++);
}

}  // namespace gradwire::data
