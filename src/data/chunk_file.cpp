#include "chunk_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "crc32c.h"
#include "mapped_file.h"

namespace gradwire::data {

namespace {
// Bytes read per pread() when the CRC is computed while reading: well inside a core's L2 cache.
constexpr uint64_t kCrcPieceBytes = 128 * 1024;
}  // namespace

ChunkFile::ChunkFile(std::string path, RecordReaderOptions options)
    : path_(std::move(path)), fd_(::open(path_.c_str(), O_RDONLY | O_CLOEXEC)) {
  if (!fd_.valid()) {
    throw InvalidArgument("gradwire: cannot open RecordIO file " + path_ + ": " +
                          errno_text(errno) + ".");
  }
  struct stat info {};
  if (::fstat(fd_.get(), &info) != 0) {
    throw BackendError("gradwire: cannot stat " + path_ + ": " + errno_text(errno));
  }
  file_size_ = static_cast<uint64_t>(info.st_size);
  if (options.map_file) mapping_ = detail::MappedFile::map(fd_.get(), file_size_);
  std::optional<ChunkDamage> damage = load_index();
  if (damage && !options.skip_corrupt) throw CorruptRecordsError(*damage);
  open_damage_ = std::move(damage);
  for (const IndexEntry& entry : index_) record_count_ += entry.record_count;
}

ChunkFile::~ChunkFile() = default;

void ChunkFile::read_into(uint64_t offset, uint64_t size, std::string& out, uint32_t* crc) const {
  if (crc != nullptr) *crc = 0;
  if (offset >= file_size_) {
    out.clear();
    return;
  }
  size = std::min(size, file_size_ - offset);
  out.resize(size);  // zero-fills only what lies past the buffer's previous size
  // With a CRC to compute, read in cache-sized pieces and checksum each while it is hot.
  const uint64_t piece = crc != nullptr ? kCrcPieceBytes : size;
  uint64_t done = 0;
  while (done < size) {
    const ssize_t got =
        ::pread(fd_.get(), out.data() + done, std::min(piece, size - done), offset + done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      throw BackendError("gradwire: reading " + std::to_string(size) + " bytes at offset " +
                         std::to_string(offset) + " of " + path_ + " failed: " + errno_text(errno));
    }
    if (got == 0) break;  // the file shrank under us: the caller sees a short read
    if (crc != nullptr) *crc = detail::crc32c_extend(*crc, out.data() + done, got);
    done += static_cast<uint64_t>(got);
  }
  out.resize(done);
}

std::string ChunkFile::read_at(uint64_t offset, uint64_t size) const {
  if (mapping_) return std::string(mapped_bytes(offset, size));
  std::string bytes;
  read_into(offset, size, bytes);
  return bytes;
}

std::string_view ChunkFile::mapped_bytes(uint64_t offset, uint64_t size) const {
  if (offset >= file_size_) return {};
  return mapping_->bytes().substr(offset, std::min(size, file_size_ - offset));
}

ChunkDamage ChunkFile::damage_at(std::optional<uint64_t> chunk, uint64_t offset,
                                 std::string problem, std::optional<uint64_t> records_lost) const {
  return ChunkDamage{path_, chunk, offset, std::move(problem), records_lost};
}

std::optional<ChunkDamage> ChunkFile::load_index() {
  const std::string file_header = read_at(0, kFileHeaderSize);
  const std::optional<uint8_t> version = file_header_version(file_header);
  if (version && *version != kRecordIoVersion) {
    throw InvalidArgument(
        "gradwire: " + path_ + " is RecordIO format version " + std::to_string(*version) +
        "; this gradwire reads version " + std::to_string(kRecordIoVersion) +
        (*version < kRecordIoVersion ? " (version 1 had zlib CRC-32 checksums, now CRC-32C)" : "") +
        ". Convert or write the file again with this version (gradwire-recordio convert, "
        "RecordWriter).");
  }
  const std::string header_problem = check_file_header(file_header);
  if (!header_problem.empty()) {
    return damage_at(std::nullopt, 0, header_problem, std::nullopt);
  }
  if (file_size_ < kFileHeaderSize + kFooterSize) {
    return recover_index_by_walking("file too short for a footer (" + std::to_string(file_size_) +
                                    " bytes): truncated");
  }
  const uint64_t footer_offset = file_size_ - kFooterSize;
  Parsed<Footer> footer = parse_footer(read_at(footer_offset, kFooterSize));
  if (!footer) return recover_index_by_walking(footer.problem);
  if (footer.value->index_offset < kFileHeaderSize ||
      footer.value->index_offset + footer.value->chunk_count * kIndexEntrySize != footer_offset) {
    return recover_index_by_walking(
        "footer places the index at byte " + std::to_string(footer.value->index_offset) + " with " +
        std::to_string(footer.value->chunk_count) + " entries, which does not end at the footer");
  }
  const uint64_t index_bytes = footer.value->chunk_count * kIndexEntrySize;
  Parsed<std::vector<IndexEntry>> index =
      parse_index(read_at(footer.value->index_offset, index_bytes), *footer.value);
  if (!index) return recover_index_by_walking(index.problem);
  index_ = std::move(*index.value);
  chunk_area_end_ = footer.value->index_offset;
  return std::nullopt;
}

ChunkDamage ChunkFile::recover_index_by_walking(const std::string& why) {
  index_.clear();
  uint64_t offset = kFileHeaderSize;
  while (true) {
    const std::string bytes = read_at(offset, kChunkHeaderSize);
    Parsed<ChunkHeader> header = parse_chunk_header(bytes);
    const uint64_t chunk = index_.size();
    if (!header) {
      chunk_area_end_ = offset;
      if (bytes.empty()) {
        return damage_at(std::nullopt, offset,
                         "the file ends after chunk " + std::to_string(chunk) +
                             " without its index (" + why + ")",
                         std::nullopt);
      }
      return damage_at(chunk, offset,
                       "truncated or damaged file: " + header.problem + " (" + why + ")",
                       std::nullopt);
    }
    if (offset + header.value->chunk_size() > file_size_) {
      chunk_area_end_ = offset;
      return damage_at(chunk, offset,
                       "truncated file: the chunk needs " +
                           std::to_string(header.value->chunk_size()) + " bytes, only " +
                           std::to_string(file_size_ - offset) + " remain (" + why + ")",
                       header.value->record_count);
    }
    index_.push_back(IndexEntry{offset, header.value->record_count});
    offset += header.value->chunk_size();
  }
}

Parsed<ChunkHeader> ChunkFile::read_chunk_header(size_t chunk) const {
  GRADWIRE_CHECK_LT(chunk, index_.size());
  if (mapping_) return parse_chunk_header(mapped_bytes(index_[chunk].offset, kChunkHeaderSize));
  return parse_chunk_header(read_at(index_[chunk].offset, kChunkHeaderSize));
}

ChunkRead ChunkFile::try_read_chunk(size_t chunk) const {
  ChunkBuffers buffers;
  return try_read_chunk(chunk, buffers);
}

ChunkRead ChunkFile::try_read_chunk(size_t chunk, ChunkBuffers& buffers) const {
  GRADWIRE_CHECK_LT(chunk, index_.size());
  const IndexEntry& entry = index_[chunk];
  const uint64_t end = chunk + 1 < index_.size() ? index_[chunk + 1].offset : chunk_area_end_;
  ChunkRead result;
  auto fail = [&](std::string problem) {
    result.damage = damage_at(chunk, entry.offset, std::move(problem), entry.record_count);
    return result;
  };
  Parsed<ChunkHeader> header = read_chunk_header(chunk);
  if (!header) return fail(header.problem);
  if (header.value->record_count != entry.record_count) {
    return fail("index says " + std::to_string(entry.record_count) +
                " records, chunk header says " + std::to_string(header.value->record_count));
  }
  if (entry.offset + header.value->chunk_size() > end) {
    return fail("chunk of " + std::to_string(header.value->chunk_size()) +
                " bytes overruns the next chunk or the index at byte " + std::to_string(end) +
                ": the index disagrees with the chunks");
  }
  DecodedChunk reuse = std::move(buffers.recycled);
  buffers.recycled = DecodedChunk{};
  const uint64_t body_offset = entry.offset + kChunkHeaderSize;
  Parsed<DecodedChunk> body;
  if (mapping_) {
    // Checked and (uncompressed) handed out where it lies; the CRC reads the page cache once.
    const std::string_view stored = mapped_bytes(body_offset, header.value->stored_size);
    body = decode_chunk_body_in_place(*header.value, stored, mapping_, std::move(reuse));
  } else if (header.value->compression == Compression::kNone) {
    // Read straight into the memory that becomes the chunk's body.
    std::string stored = std::move(reuse.body);
    uint32_t crc = 0;
    read_into(body_offset, header.value->stored_size, stored, &crc);
    body = decode_chunk_body(*header.value, stored, std::move(reuse), crc);
  } else {
    uint32_t crc = 0;
    read_into(body_offset, header.value->stored_size, buffers.stored, &crc);
    body = decode_chunk_body(*header.value, buffers.stored, std::move(reuse), crc);
  }
  if (!body) return fail(body.problem);
  result.chunk = std::move(body.value);
  return result;
}

DecodedChunk ChunkFile::read_chunk(size_t chunk) const {
  ChunkRead read = try_read_chunk(chunk);
  if (read.damage) throw CorruptRecordsError(*read.damage);
  return std::move(*read.chunk);
}

}  // namespace gradwire::data
