#include "gradwire/data/recordio_inspect.h"

#include <memory>

#include "chunk_file.h"

namespace gradwire::data {

FileInspection inspect_record_file(const std::string& path, bool verify) {
  FileInspection inspection;
  inspection.path = path;
  std::unique_ptr<const ChunkFile> reader;
  try {
    reader = std::make_unique<const ChunkFile>(path, RecordReaderOptions{/*skip_corrupt=*/true});
  } catch (const CorruptRecordsError& e) {
    inspection.damages.push_back(e.damage());  // not even the file header is right
    return inspection;
  }
  inspection.file_bytes = reader->file_size();
  if (reader->open_damage()) inspection.damages.push_back(*reader->open_damage());
  const std::vector<IndexEntry>& index = reader->chunks();
  for (size_t i = 0; i < index.size(); ++i) {
    Parsed<ChunkHeader> header = reader->read_chunk_header(i);
    if (!header) {
      inspection.damages.push_back(
          ChunkDamage{path, i, index[i].offset, header.problem, index[i].record_count});
      continue;
    }
    inspection.chunks.push_back(ChunkSummary{index[i].offset, header.value->record_count,
                                             header.value->compression, header.value->body_size,
                                             header.value->stored_size});
    inspection.records += header.value->record_count;
    if (!verify) continue;
    ChunkRead read = reader->try_read_chunk(i);
    if (read.damage) {
      inspection.damages.push_back(*read.damage);
    } else if (i + 1 < index.size() &&
               index[i].offset + header.value->chunk_size() != index[i + 1].offset) {
      inspection.damages.push_back(ChunkDamage{
          path, i, index[i].offset,
          std::to_string(index[i + 1].offset - index[i].offset - header.value->chunk_size()) +
              " bytes between this chunk and the next belong to no chunk: the index disagrees "
              "with the chunks",
          std::nullopt});
    }
  }
  return inspection;
}

}  // namespace gradwire::data
