// RecordWriter / RecordFileReader / ChunkFile: round trips, seeking, and damaged files (bad CRC,
// truncation, an index that disagrees with the chunks) with and without skip_corrupt, reading
// through a memory map (the default) and with pread.
#include <gtest/gtest.h>

#include "data/chunk_file.h"
#include "gradwire/data/recordio_reader.h"
#include "recordio_test_files.h"

namespace gradwire::data {
namespace {

using testing::read_bytes;
using testing::test_record;
using testing::write_bytes;
using testing::write_test_file;

RecordReaderOptions reading(bool map_file, bool skip_corrupt = false) {
  RecordReaderOptions options;
  options.skip_corrupt = skip_corrupt;
  options.map_file = map_file;
  return options;
}

std::vector<std::string> read_all(RecordFileReader& reader) {
  std::vector<std::string> records;
  while (auto record = reader.next_record()) records.emplace_back(*record);
  return records;
}

// Expects `fn` to throw CorruptRecordsError for `path`, chunk `chunk` at byte `offset`, with
// `problem` in the message; returns the damage.
template <typename Fn>
ChunkDamage expect_damage(Fn fn, const std::string& path, std::optional<uint64_t> chunk,
                          uint64_t offset, const std::string& problem) {
  try {
    fn();
  } catch (const CorruptRecordsError& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.damage().file, path);
    EXPECT_EQ(e.damage().chunk, chunk);
    EXPECT_EQ(e.damage().byte_offset, offset);
    EXPECT_NE(message.find(path), std::string::npos) << message;
    if (chunk)
      EXPECT_NE(message.find("chunk " + std::to_string(*chunk)), std::string::npos) << message;
    EXPECT_NE(message.find("byte " + std::to_string(offset)), std::string::npos) << message;
    EXPECT_NE(message.find(problem), std::string::npos) << message;
    return e.damage();
  }
  ADD_FAILURE() << "no CorruptRecordsError";
  return {};
}

TEST(RecordIoFile, RoundTripCompressedAndNot) {
  testing::TempDir dir;
  for (Compression compression : {Compression::kNone, Compression::kZstd}) {
    for (bool map : {true, false}) {
      SCOPED_TRACE(map ? "mapped" : "pread");
      const std::string path = dir.file(std::string("f-") + to_string(compression));
      RecordFileSummary summary = write_test_file(path, 0, 1000, 64, compression);
      EXPECT_EQ(summary.records, 1000u);
      EXPECT_EQ(summary.chunks, 16u);  // 15 full chunks of 64 + 40
      RecordFileReader reader(path, reading(map));
      EXPECT_EQ(reader.mapped(), map);
      EXPECT_EQ(reader.record_count(), 1000u);
      ASSERT_EQ(reader.chunk_count(), 16u);
      const ChunkFile file(path, reading(map));
      EXPECT_EQ(file.chunks().back().record_count, 40u);
      const std::vector<std::string> records = read_all(reader);
      ASSERT_EQ(records.size(), 1000u);
      for (uint64_t i = 0; i < records.size(); ++i) EXPECT_EQ(records[i], test_record(0, i));
      Parsed<ChunkHeader> header = file.read_chunk_header(3);
      ASSERT_TRUE(header);
      EXPECT_EQ(header.value->compression, compression);
    }
  }
}

TEST(RecordIoFile, MappedChunksViewTheFileAndOutliveTheReader) {
  testing::TempDir dir;
  for (Compression compression : {Compression::kNone, Compression::kZstd}) {
    const std::string path = dir.file(std::string("view-") + to_string(compression));
    write_test_file(path, 5, 100, 10, compression);
    std::optional<DecodedChunk> chunk;
    {
      const ChunkFile file(path);
      ASSERT_TRUE(file.mapped());
      chunk = file.read_chunk(4);
      // Uncompressed: a view of the mapping, no copy; zstd: decompressed into owned memory.
      EXPECT_EQ(chunk->owner != nullptr, compression == Compression::kNone);
      EXPECT_EQ(chunk->body.empty(), compression == Compression::kNone);
      const ChunkFile copying(path, reading(/*map_file=*/false));
      EXPECT_FALSE(copying.mapped());
      DecodedChunk copied = copying.read_chunk(4);
      EXPECT_EQ(copied.owner, nullptr);
      EXPECT_EQ(copied.bytes(), chunk->bytes());
    }
    // The reader is gone; the chunk keeps the mapping alive.
    ASSERT_EQ(chunk->size(), 10u);
    for (size_t r = 0; r < 10; ++r) EXPECT_EQ(chunk->record(r), test_record(5, 40 + r));
  }
}

TEST(RecordIoFile, ChunkByteBoundAndEmptyFile) {
  testing::TempDir dir;
  RecordWriterOptions options;
  options.chunk_bytes = 1000;
  RecordWriter writer(dir.file("bytes"), options);
  for (int i = 0; i < 100; ++i) writer.write(std::string(96, 'a'));  // 100 bytes with its length
  EXPECT_EQ(writer.close().chunks, 10u);
  RecordWriter empty(dir.file("empty"));
  empty.close();
  RecordFileReader reader(dir.file("empty"));
  EXPECT_EQ(reader.chunk_count(), 0u);
  EXPECT_FALSE(reader.next_record());
}

TEST(RecordIoFile, SeekAndReadChunkByIndex) {
  testing::TempDir dir;
  const std::string path = dir.file("seek");
  write_test_file(path, 0, 100, 10, Compression::kZstd);
  DecodedChunk chunk = ChunkFile(path).read_chunk(7);
  RecordFileReader reader(path);
  ASSERT_EQ(chunk.size(), 10u);
  EXPECT_EQ(chunk.record(0), test_record(0, 70));
  EXPECT_EQ(chunk.record(9), test_record(0, 79));
  reader.seek_to_chunk(9);
  EXPECT_EQ(*reader.next_record(), test_record(0, 90));
  reader.seek_to_chunk(2);
  EXPECT_EQ(*reader.next_record(), test_record(0, 20));
  reader.seek_to_chunk(10);
  EXPECT_FALSE(reader.next_record());
  EXPECT_THROW(reader.seek_to_chunk(11), InvalidArgument);
}

TEST(RecordIoFile, BadCrcNamesFileChunkAndOffsetAndSkipCounts) {
  testing::TempDir dir;
  for (Compression compression : {Compression::kNone, Compression::kZstd}) {
    for (bool map : {true, false}) {
      SCOPED_TRACE(map ? "mapped" : "pread");
      const std::string path = dir.file(std::string("crc-") + to_string(compression));
      write_test_file(path, 0, 50, 10, compression);
      const uint64_t offset = ChunkFile(path).chunks()[2].offset;
      std::string bytes = read_bytes(path);
      bytes[offset + kChunkHeaderSize + 3] ^= 0x10;
      write_bytes(path, bytes);

      expect_damage([&] { ChunkFile(path, reading(map)).read_chunk(2); }, path, 2, offset,
                    "CRC mismatch");
      RecordFileReader strict(path, reading(map));
      expect_damage([&] { read_all(strict); }, path, 2, offset, "CRC mismatch");

      RecordFileReader skipping(path, reading(map, /*skip_corrupt=*/true));
      const std::vector<std::string> records = read_all(skipping);
      EXPECT_EQ(records.size(), 40u);
      EXPECT_EQ(records[20], test_record(0, 30));  // chunk 2 (records 20..29) is gone
      EXPECT_EQ(skipping.stats().chunks_skipped, 1u);
      EXPECT_EQ(skipping.stats().records_skipped, 10u);
      ASSERT_EQ(skipping.stats().damages.size(), 1u);
      EXPECT_EQ(skipping.stats().damages[0].chunk, 2u);
    }
  }
}

TEST(RecordIoFile, TruncatedFileNamesTheCutChunk) {
  testing::TempDir dir;
  for (bool map : {true, false}) {
    SCOPED_TRACE(map ? "mapped" : "pread");
    const std::string path = dir.file("cut");
    write_test_file(path, 0, 50, 10);
    const uint64_t offset = ChunkFile(path).chunks()[3].offset;
    write_bytes(path, read_bytes(path).substr(0, offset + 50));  // inside chunk 3's body

    expect_damage([&] { RecordFileReader reader(path, reading(map)); }, path, 3, offset,
                  "truncated");
    RecordFileReader skipping(path, reading(map, /*skip_corrupt=*/true));
    ASSERT_TRUE(skipping.open_damage());
    EXPECT_EQ(skipping.open_damage()->records_lost, 10u);
    EXPECT_EQ(skipping.chunk_count(), 3u);
    const std::vector<std::string> records = read_all(skipping);
    ASSERT_EQ(records.size(), 30u);
    EXPECT_EQ(records.back(), test_record(0, 29));
    EXPECT_EQ(skipping.stats().records_skipped, 10u);

    // Cut inside a chunk header, and cut just before the footer: both named.
    write_test_file(path, 0, 50, 10);
    const std::string whole = read_bytes(path);
    write_bytes(path, whole.substr(0, offset + 7));
    expect_damage([&] { RecordFileReader reader(path, reading(map)); }, path, 3, offset,
                  "cut short");
    write_bytes(path, whole.substr(0, whole.size() - 1));
    const uint64_t index_offset = whole.size() - kFooterSize - 5 * kIndexEntrySize;
    expect_damage([&] { RecordFileReader reader(path, reading(map)); }, path, 5, index_offset,
                  "truncated");
    EXPECT_EQ(RecordFileReader(path, reading(map, /*skip_corrupt=*/true)).record_count(), 50u);
  }
}

TEST(RecordIoFile, IndexDisagreeingWithChunksIsNamed) {
  testing::TempDir dir;
  const std::string path = dir.file("index");
  write_test_file(path, 0, 50, 10);
  std::vector<IndexEntry> index = ChunkFile(path).chunks();
  const std::string bytes = read_bytes(path);
  const uint64_t index_offset = bytes.size() - kFooterSize - index.size() * kIndexEntrySize;
  // A consistent footer and index that lie about chunk 1's record count.
  index[1].record_count = 11;
  const std::string new_index = encode_index(index);
  const std::string footer =
      encode_footer(Footer{index_offset, index.size(), 51, crc32_of(new_index)});
  write_bytes(path, bytes.substr(0, index_offset) + new_index + footer);
  const ChunkFile file(path);
  expect_damage([&] { file.read_chunk(1); }, path, 1, index[1].offset, "index says 11 records");
  // An index entry pointing into the end of chunk 0.
  index[1].record_count = 10;
  index[1].offset -= 4;
  const std::string shifted = encode_index(index);
  write_bytes(path, bytes.substr(0, index_offset) + shifted +
                        encode_footer(Footer{index_offset, index.size(), 50, crc32_of(shifted)}));
  const ChunkFile shifted_reader(path);
  expect_damage([&] { shifted_reader.read_chunk(1); }, path, 1, index[1].offset, "magic");
  // Chunk 0 now overruns the shifted start of chunk 1.
  expect_damage([&] { shifted_reader.read_chunk(0); }, path, 0, index[0].offset, "overruns");
}

TEST(RecordIoFile, NotARecordIoFile) {
  testing::TempDir dir;
  write_bytes(dir.file("text"), "hello, this is not a record file at all, just text");
  expect_damage([&] { RecordFileReader reader(dir.file("text")); }, dir.file("text"), std::nullopt,
                0, "not a RecordIO file");
  EXPECT_THROW(RecordFileReader(dir.file("missing")), InvalidArgument);
}

TEST(RecordIoFile, AFileOfAnotherFormatVersionIsRefusedByName) {
  testing::TempDir dir;
  const std::string path = dir.file("version1");
  write_test_file(path, 0, 30, 10);
  std::string bytes = read_bytes(path);
  bytes[7] = 1;  // as written by gradwire before CRC-32C
  write_bytes(path, bytes);
  for (bool skip_corrupt : {false, true}) {
    try {
      RecordFileReader reader(path, RecordReaderOptions{skip_corrupt});
      ADD_FAILURE() << "a version 1 file was opened";
    } catch (const InvalidArgument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(path), std::string::npos) << message;
      EXPECT_NE(message.find("version 1"), std::string::npos) << message;
      EXPECT_NE(message.find("reads version 2"), std::string::npos) << message;
    }
  }
}

TEST(RecordIoFile, LargeChunksAreCheckedPieceByPiece) {
  // Chunks above the 128 KiB read piece: the CRC computed while reading covers every piece.
  testing::TempDir dir;
  const std::string path = dir.file("large");
  RecordWriterOptions options;
  options.chunk_bytes = 1 << 20;
  RecordWriter writer(path, options);
  std::string record(100000, '\0');
  for (int i = 0; i < 30; ++i) {
    for (size_t b = 0; b < record.size(); ++b) record[b] = static_cast<char>((b * 7 + i) & 0xff);
    writer.write(record);
  }
  writer.close();
  const std::string intact = read_bytes(path);
  for (bool map : {true, false}) {
    SCOPED_TRACE(map ? "mapped" : "pread");
    write_bytes(path, intact);
    RecordFileReader reader(path, reading(map));
    ASSERT_EQ(reader.chunk_count(), 3u);
    EXPECT_EQ(read_all(reader).size(), 30u);
    std::string bytes = intact;
    const uint64_t offset = ChunkFile(path).chunks()[1].offset;
    bytes[offset + kChunkHeaderSize + 700000] ^= 0x01;  // in the sixth piece of chunk 1
    write_bytes(path, bytes);
    const ChunkFile damaged(path, reading(map));
    expect_damage([&] { damaged.read_chunk(1); }, path, 1, offset, "CRC mismatch");
    EXPECT_EQ(damaged.read_chunk(2).size(), 8u);  // chunks of 11, 11 and 8 records
  }
}

TEST(RecordIoFile, SequentialReadingReusesChunkMemoryAcrossChunks) {
  testing::TempDir dir;
  for (Compression compression : {Compression::kNone, Compression::kZstd}) {
    const std::string path = dir.file(std::string("reuse-") + to_string(compression));
    write_test_file(path, 3, 500, 50, compression);
    const ChunkFile file(path, reading(/*map_file=*/false));
    ChunkBuffers buffers;
    for (size_t c = 0; c < file.chunks().size(); ++c) {
      ChunkRead read = file.try_read_chunk(c, buffers);
      ASSERT_TRUE(read.chunk);
      ASSERT_EQ(read.chunk->size(), 50u);
      for (size_t r = 0; r < 50; ++r) EXPECT_EQ(read.chunk->record(r), test_record(3, c * 50 + r));
      EXPECT_TRUE(buffers.recycled.body.empty());
      buffers.recycled = std::move(*read.chunk);
    }
    // next_record() recycles too: a full pass and a second one after seeking back.
    RecordFileReader reader(path, reading(/*map_file=*/false));
    for (int pass = 0; pass < 2; ++pass) {
      reader.seek_to_chunk(0);
      EXPECT_EQ(read_all(reader).size(), 500u);
    }
  }
}

}  // namespace
}  // namespace gradwire::data
