// RecordIO framing (docs/formats/recordio.md). Pure: bytes in, bytes or problems out.
#include "recordio_format.h"

#include <zstd.h>

#include <cstring>
#include <sstream>

#include "common/byte_order.h"
#include "common/enum_names.h"
#include "crc32c.h"
#include "gradwire/common/error.h"

namespace gradwire::data {

namespace {
constexpr char kFileMagic[] = "GWRECIO";       // 7 bytes + version byte
constexpr uint32_t kChunkMagic = 0x4b435747;   // "GWCK" in file order
constexpr uint32_t kFooterMagic = 0x46525747;  // "GWRF" in file order

std::string hex(uint32_t value) {
  std::ostringstream out;
  out << "0x" << std::hex << value;
  return out.str();
}

template <typename T>
Parsed<T> problem(std::string text) {
  Parsed<T> result;
  result.problem = std::move(text);
  return result;
}
}  // namespace

namespace {
constexpr EnumNames<Compression, 2> kCompressionNames{
    {{{Compression::kNone, "none"}, {Compression::kZstd, "zstd"}}}};
}  // namespace

const char* to_string(Compression compression) { return kCompressionNames.name(compression); }

std::optional<Compression> parse_compression(std::string_view text) {
  return kCompressionNames.parse(text);
}

uint32_t crc32_of(std::string_view bytes) {
  return detail::crc32c_extend(0, bytes.data(), bytes.size());
}

void ChunkBuilder::add(std::string_view record) {
  if (record.size() > UINT32_MAX) {
    throw InvalidArgument("gradwire: a RecordIO record holds at most 4 GiB - 1 bytes; got " +
                          std::to_string(record.size()) + ". Split the record.");
  }
  lengths_.push_back(static_cast<uint32_t>(record.size()));
  payload_.append(record);
}

void ChunkBuilder::clear() {
  lengths_.clear();
  payload_.clear();
}

std::string ChunkBuilder::encode(Compression compression, int zstd_level) const {
  std::string body;
  body.reserve(body_size());
  for (uint32_t length : lengths_) put_le<uint32_t>(body, length);
  body.append(payload_);

  ChunkHeader header;
  header.compression = compression;
  header.record_count = static_cast<uint32_t>(lengths_.size());
  header.body_size = body.size();
  std::string stored;
  if (compression == Compression::kZstd) {
    stored.resize(ZSTD_compressBound(body.size()));
    const size_t written =
        ZSTD_compress(stored.data(), stored.size(), body.data(), body.size(), zstd_level);
    if (ZSTD_isError(written)) {
      throw InternalError(std::string("gradwire: zstd compression of a RecordIO chunk failed: ") +
                          ZSTD_getErrorName(written));
    }
    stored.resize(written);
  } else {
    stored = std::move(body);
  }
  header.stored_size = stored.size();
  header.stored_crc = crc32_of(stored);
  return encode_chunk_header(header) + stored;
}

std::string encode_file_header() {
  std::string out(kFileMagic, 7);
  out.push_back(static_cast<char>(kRecordIoVersion));
  return out;
}

std::optional<uint8_t> file_header_version(std::string_view bytes) {
  if (bytes.size() < kFileHeaderSize || bytes.substr(0, 7) != std::string_view(kFileMagic, 7)) {
    return std::nullopt;
  }
  return static_cast<uint8_t>(bytes[7]);
}

std::string check_file_header(std::string_view bytes) {
  if (bytes.size() < kFileHeaderSize) {
    return "file is shorter than the " + std::to_string(kFileHeaderSize) + "-byte file header";
  }
  if (bytes.substr(0, 7) != std::string_view(kFileMagic, 7)) {
    return "not a RecordIO file (no GWRECIO magic at byte 0)";
  }
  if (static_cast<uint8_t>(bytes[7]) != kRecordIoVersion) {
    return "unsupported RecordIO version " + std::to_string(static_cast<uint8_t>(bytes[7]));
  }
  return "";
}

std::string encode_chunk_header(const ChunkHeader& header) {
  std::string out;
  out.reserve(kChunkHeaderSize);
  put_le<uint32_t>(out, kChunkMagic);
  put_le<uint8_t>(out, kRecordIoVersion);
  put_le<uint8_t>(out, static_cast<uint8_t>(header.compression));
  put_le<uint16_t>(out, 0);
  put_le<uint32_t>(out, header.record_count);
  put_le<uint32_t>(out, header.stored_crc);
  put_le<uint64_t>(out, header.body_size);
  put_le<uint64_t>(out, header.stored_size);
  put_le<uint32_t>(out, 0);
  put_le<uint32_t>(out, crc32_of(out));
  return out;
}

Parsed<ChunkHeader> parse_chunk_header(std::string_view bytes) {
  if (bytes.size() < kChunkHeaderSize) {
    return problem<ChunkHeader>("chunk header cut short: " + std::to_string(bytes.size()) + " of " +
                                std::to_string(kChunkHeaderSize) + " bytes present");
  }
  const uint32_t magic = get_le<uint32_t>(bytes, 0);
  if (magic != kChunkMagic) {
    return problem<ChunkHeader>("no chunk magic (found " + hex(magic) + ", expected " +
                                hex(kChunkMagic) + ")");
  }
  const uint32_t header_crc = get_le<uint32_t>(bytes, 36);
  const uint32_t computed = crc32_of(bytes.substr(0, 36));
  if (header_crc != computed) {
    return problem<ChunkHeader>("chunk header CRC mismatch (stored " + hex(header_crc) +
                                ", computed " + hex(computed) + ")");
  }
  const uint8_t version = get_le<uint8_t>(bytes, 4);
  if (version != kRecordIoVersion) {
    return problem<ChunkHeader>("unsupported chunk version " + std::to_string(version));
  }
  const uint8_t compression = get_le<uint8_t>(bytes, 5);
  if (compression > static_cast<uint8_t>(Compression::kZstd)) {
    return problem<ChunkHeader>("unknown compression code " + std::to_string(compression));
  }
  ChunkHeader header;
  header.compression = static_cast<Compression>(compression);
  header.record_count = get_le<uint32_t>(bytes, 8);
  header.stored_crc = get_le<uint32_t>(bytes, 12);
  header.body_size = get_le<uint64_t>(bytes, 16);
  header.stored_size = get_le<uint64_t>(bytes, 24);
  if (header.body_size > kMaxChunkBodyBytes || header.stored_size > kMaxChunkBodyBytes * 2 ||
      header.body_size < 4 * uint64_t{header.record_count}) {
    return problem<ChunkHeader>("implausible chunk sizes (body " +
                                std::to_string(header.body_size) + ", stored " +
                                std::to_string(header.stored_size) + ", " +
                                std::to_string(header.record_count) + " records)");
  }
  if (header.compression == Compression::kNone && header.stored_size != header.body_size) {
    return problem<ChunkHeader>("uncompressed chunk with stored size " +
                                std::to_string(header.stored_size) + " != body size " +
                                std::to_string(header.body_size));
  }
  return Parsed<ChunkHeader>{header, ""};
}

Parsed<DecodedChunk> decode_chunk_body(const ChunkHeader& header, std::string_view stored) {
  std::string copy(stored);
  return decode_chunk_body(header, copy, DecodedChunk{});
}

namespace {

// The stored bytes' CRC against the header; empty when they agree.
std::string check_stored(const ChunkHeader& header, std::string_view stored,
                         std::optional<uint32_t> stored_crc) {
  if (stored.size() != header.stored_size) {
    return "chunk body cut short: " + std::to_string(stored.size()) + " of " +
           std::to_string(header.stored_size) + " bytes present";
  }
  const uint32_t crc = stored_crc ? *stored_crc : crc32_of(stored);
  if (crc != header.stored_crc) {
    return "chunk CRC mismatch (stored " + hex(header.stored_crc) + ", computed " + hex(crc) + ")";
  }
  return "";
}

// Decompresses a zstd body into chunk.body (its memory reused); empty when that worked.
std::string decompress_into(const ChunkHeader& header, std::string_view stored,
                            DecodedChunk& chunk) {
  // Growing a reused body zero-fills only the bytes past its previous size.
  chunk.body.resize(header.body_size);
  const size_t got =
      ZSTD_decompress(chunk.body.data(), chunk.body.size(), stored.data(), stored.size());
  if (ZSTD_isError(got) || got != header.body_size) {
    return std::string("zstd could not restore the chunk body: ") +
           (ZSTD_isError(got) ? ZSTD_getErrorName(got)
                              : "got " + std::to_string(got) + " bytes, header says " +
                                    std::to_string(header.body_size));
  }
  return "";
}

// Fills chunk.record_starts from the length table at the front of chunk.bytes().
Parsed<DecodedChunk> split_records(const ChunkHeader& header, DecodedChunk chunk) {
  const std::string_view body = chunk.bytes();
  uint64_t start = 4 * uint64_t{header.record_count};
  chunk.record_starts.resize(size_t{header.record_count} + 1);
  uint64_t* starts = chunk.record_starts.data();
  starts[0] = start;
  for (uint32_t i = 0; i < header.record_count; ++i) {
    start += get_le<uint32_t>(body, 4 * size_t{i});
    starts[i + 1] = start;
  }
  if (start != body.size()) {
    return problem<DecodedChunk>("record lengths add up to " + std::to_string(start) +
                                 " bytes but the body holds " + std::to_string(body.size()));
  }
  return Parsed<DecodedChunk>{std::move(chunk), ""};
}

}  // namespace

Parsed<DecodedChunk> decode_chunk_body(const ChunkHeader& header, std::string& stored,
                                       DecodedChunk reuse, std::optional<uint32_t> stored_crc) {
  std::string damage = check_stored(header, stored, stored_crc);
  if (!damage.empty()) return problem<DecodedChunk>(std::move(damage));
  DecodedChunk chunk = std::move(reuse);
  chunk.owner.reset();
  chunk.viewed = {};
  if (header.compression == Compression::kZstd) {
    damage = decompress_into(header, stored, chunk);
    if (!damage.empty()) return problem<DecodedChunk>(std::move(damage));
  } else {
    chunk.body = std::move(stored);
  }
  return split_records(header, std::move(chunk));
}

Parsed<DecodedChunk> decode_chunk_body_in_place(const ChunkHeader& header, std::string_view stored,
                                                std::shared_ptr<const void> owner,
                                                DecodedChunk reuse,
                                                std::optional<uint32_t> stored_crc) {
  std::string damage = check_stored(header, stored, stored_crc);
  if (!damage.empty()) return problem<DecodedChunk>(std::move(damage));
  DecodedChunk chunk = std::move(reuse);
  if (header.compression == Compression::kZstd) {
    chunk.owner.reset();
    chunk.viewed = {};
    damage = decompress_into(header, stored, chunk);
    if (!damage.empty()) return problem<DecodedChunk>(std::move(damage));
  } else {
    GRADWIRE_CHECK(owner != nullptr);
    chunk.viewed = stored;
    chunk.owner = std::move(owner);
  }
  return split_records(header, std::move(chunk));
}

std::string encode_index(const std::vector<IndexEntry>& entries) {
  std::string out;
  out.reserve(entries.size() * kIndexEntrySize);
  for (const IndexEntry& entry : entries) {
    put_le<uint64_t>(out, entry.offset);
    put_le<uint32_t>(out, entry.record_count);
    put_le<uint32_t>(out, 0);
  }
  return out;
}

Parsed<std::vector<IndexEntry>> parse_index(std::string_view bytes, const Footer& footer) {
  using Result = std::vector<IndexEntry>;
  if (bytes.size() != footer.chunk_count * kIndexEntrySize) {
    return problem<Result>("index holds " + std::to_string(bytes.size()) + " bytes, footer says " +
                           std::to_string(footer.chunk_count) + " chunks");
  }
  const uint32_t crc = crc32_of(bytes);
  if (crc != footer.index_crc) {
    return problem<Result>("index CRC mismatch (footer says " + hex(footer.index_crc) +
                           ", computed " + hex(crc) + ")");
  }
  Result entries(footer.chunk_count);
  uint64_t records = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    entries[i].offset = get_le<uint64_t>(bytes, i * kIndexEntrySize);
    entries[i].record_count = get_le<uint32_t>(bytes, i * kIndexEntrySize + 8);
    records += entries[i].record_count;
    const uint64_t previous = i == 0 ? kFileHeaderSize - 1 : entries[i - 1].offset;
    if (entries[i].offset <= previous || entries[i].offset >= footer.index_offset) {
      return problem<Result>("index entry " + std::to_string(i) + " points at byte " +
                             std::to_string(entries[i].offset) +
                             ", outside the chunk area or out of order");
    }
  }
  if (records != footer.record_count) {
    return problem<Result>("index counts " + std::to_string(records) + " records, footer says " +
                           std::to_string(footer.record_count));
  }
  return Parsed<Result>{std::move(entries), ""};
}

std::string encode_footer(const Footer& footer) {
  std::string out;
  out.reserve(kFooterSize);
  put_le<uint64_t>(out, footer.index_offset);
  put_le<uint64_t>(out, footer.chunk_count);
  put_le<uint64_t>(out, footer.record_count);
  put_le<uint32_t>(out, footer.index_crc);
  put_le<uint32_t>(out, kRecordIoVersion);
  put_le<uint32_t>(out, crc32_of(out));
  put_le<uint32_t>(out, kFooterMagic);
  return out;
}

Parsed<Footer> parse_footer(std::string_view bytes) {
  if (bytes.size() != kFooterSize) {
    return problem<Footer>("footer cut short: " + std::to_string(bytes.size()) + " of " +
                           std::to_string(kFooterSize) + " bytes");
  }
  const uint32_t magic = get_le<uint32_t>(bytes, 36);
  if (magic != kFooterMagic) {
    return problem<Footer>("no footer magic at the end of the file (found " + hex(magic) +
                           "): the file is truncated or was not closed by its writer");
  }
  const uint32_t stored_crc = get_le<uint32_t>(bytes, 32);
  const uint32_t computed = crc32_of(bytes.substr(0, 32));
  if (stored_crc != computed) {
    return problem<Footer>("footer CRC mismatch (stored " + hex(stored_crc) + ", computed " +
                           hex(computed) + ")");
  }
  const uint32_t version = get_le<uint32_t>(bytes, 28);
  if (version != kRecordIoVersion) {
    return problem<Footer>("unsupported footer version " + std::to_string(version));
  }
  Footer footer;
  footer.index_offset = get_le<uint64_t>(bytes, 0);
  footer.chunk_count = get_le<uint64_t>(bytes, 8);
  footer.record_count = get_le<uint64_t>(bytes, 16);
  footer.index_crc = get_le<uint32_t>(bytes, 24);
  return Parsed<Footer>{footer, ""};
}

}  // namespace gradwire::data
