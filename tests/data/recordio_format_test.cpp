// RecordIO framing: pure encode/parse round trips and every damage the parser must name.
#include "data/recordio_format.h"

#include <gtest/gtest.h>

namespace gradwire::data {
namespace {

std::string chunk_of(const std::vector<std::string>& records, Compression compression) {
  ChunkBuilder builder;
  for (const auto& record : records) builder.add(record);
  return builder.encode(compression);
}

Parsed<DecodedChunk> decode(const std::string& bytes) {
  Parsed<ChunkHeader> header = parse_chunk_header(bytes);
  EXPECT_TRUE(header) << header.problem;
  return decode_chunk_body(*header.value, std::string_view(bytes).substr(kChunkHeaderSize));
}

TEST(RecordIoFormat, ChunkRoundTripUncompressedAndZstd) {
  const std::vector<std::string> records = {"", "a", std::string(5000, 'x'), "hello\0world"};
  for (Compression compression : {Compression::kNone, Compression::kZstd}) {
    const std::string bytes = chunk_of(records, compression);
    Parsed<DecodedChunk> chunk = decode(bytes);
    ASSERT_TRUE(chunk) << chunk.problem;
    ASSERT_EQ(chunk.value->size(), records.size());
    for (size_t i = 0; i < records.size(); ++i) EXPECT_EQ(chunk.value->record(i), records[i]);
  }
  // zstd actually compresses the repetitive record.
  EXPECT_LT(chunk_of(records, Compression::kZstd).size(),
            chunk_of(records, Compression::kNone).size());
}

TEST(RecordIoFormat, FlippedBodyByteIsACrcMismatch) {
  for (Compression compression : {Compression::kNone, Compression::kZstd}) {
    std::string bytes = chunk_of({"abc", std::string(100, 'q')}, compression);
    bytes[kChunkHeaderSize + 5] ^= 0x40;
    Parsed<DecodedChunk> chunk = decode(bytes);
    EXPECT_FALSE(chunk);
    EXPECT_NE(chunk.problem.find("CRC mismatch"), std::string::npos) << chunk.problem;
  }
}

TEST(RecordIoFormat, DamagedHeaderIsNamed) {
  std::string bytes = chunk_of({"abc"}, Compression::kNone);
  std::string bad_count = bytes;
  bad_count[8] ^= 1;  // record count
  EXPECT_NE(parse_chunk_header(bad_count).problem.find("header CRC"), std::string::npos);
  std::string bad_magic = bytes;
  bad_magic[0] = 'X';
  EXPECT_NE(parse_chunk_header(bad_magic).problem.find("magic"), std::string::npos);
  EXPECT_NE(parse_chunk_header(bytes.substr(0, 10)).problem.find("cut short"), std::string::npos);
  Parsed<ChunkHeader> header = parse_chunk_header(bytes);
  ASSERT_TRUE(header);
  EXPECT_NE(decode_chunk_body(*header.value, std::string_view(bytes).substr(kChunkHeaderSize, 3))
                .problem.find("cut short"),
            std::string::npos);
}

TEST(RecordIoFormat, FooterAndIndexRoundTripAndDamage) {
  const std::vector<IndexEntry> entries = {{8, 3}, {100, 5}, {400, 1}};
  const std::string index = encode_index(entries);
  Footer footer{1000, 3, 9, crc32_of(index)};
  Parsed<Footer> parsed = parse_footer(encode_footer(footer));
  ASSERT_TRUE(parsed) << parsed.problem;
  EXPECT_EQ(parsed.value->index_offset, 1000u);
  EXPECT_EQ(parsed.value->record_count, 9u);
  Parsed<std::vector<IndexEntry>> back = parse_index(index, footer);
  ASSERT_TRUE(back) << back.problem;
  EXPECT_EQ(*back.value, entries);

  std::string bad_footer = encode_footer(footer);
  bad_footer[3] ^= 1;
  EXPECT_NE(parse_footer(bad_footer).problem.find("footer CRC"), std::string::npos);
  EXPECT_NE(parse_footer(bad_footer.substr(0, 20)).problem.find("cut short"), std::string::npos);
  std::string bad_index = index;
  bad_index[0] ^= 1;
  EXPECT_NE(parse_index(bad_index, footer).problem.find("index CRC"), std::string::npos);
  Footer wrong_total = footer;
  wrong_total.record_count = 10;
  EXPECT_NE(parse_index(index, wrong_total).problem.find("records"), std::string::npos);
  const std::string unordered = encode_index({{100, 3}, {8, 5}, {400, 1}});
  Footer unordered_footer{1000, 3, 9, crc32_of(unordered)};
  EXPECT_NE(parse_index(unordered, unordered_footer).problem.find("out of order"),
            std::string::npos);
}

TEST(RecordIoFormat, FileHeaderAndCompressionNames) {
  EXPECT_EQ(check_file_header(encode_file_header()), "");
  EXPECT_NE(check_file_header("GWRECIX\x01"), "");
  EXPECT_NE(check_file_header("GW"), "");
  EXPECT_EQ(parse_compression("zstd"), Compression::kZstd);
  EXPECT_EQ(parse_compression("none"), Compression::kNone);
  EXPECT_FALSE(parse_compression("gzip"));
  // CRC-32C of "123456789" is the standard check value.
  EXPECT_EQ(crc32_of("123456789"), 0xE3069283u);
}

TEST(RecordIoFormat, OtherVersionsAreNamedAndRefused) {
  const std::string current = encode_file_header();
  EXPECT_EQ(file_header_version(current), kRecordIoVersion);
  EXPECT_EQ(kRecordIoVersion, 2);
  std::string version1 = current;
  version1[7] = 1;
  EXPECT_EQ(file_header_version(version1), 1);
  EXPECT_NE(check_file_header(version1).find("unsupported RecordIO version 1"), std::string::npos);
  EXPECT_FALSE(file_header_version("GWRECIX\x02"));
  EXPECT_FALSE(file_header_version("GWREC"));
  // A chunk header of another version is refused too (its own CRC is right).
  ChunkBuilder builder;
  builder.add("x");
  std::string chunk = builder.encode(Compression::kNone);
  ChunkHeader header = *parse_chunk_header(chunk).value;
  std::string old_header = encode_chunk_header(header);
  old_header[4] = 1;
  const uint32_t crc = crc32_of(std::string_view(old_header).substr(0, 36));
  for (int i = 0; i < 4; ++i) old_header[36 + i] = static_cast<char>(crc >> (8 * i) & 0xff);
  EXPECT_NE(parse_chunk_header(old_header).problem.find("unsupported chunk version 1"),
            std::string::npos);
}

TEST(RecordIoFormat, MovingDecodeReusesTheStoredBytes) {
  ChunkBuilder builder;
  builder.add("first");
  builder.add(std::string(3000, 'z'));
  for (Compression compression : {Compression::kNone, Compression::kZstd}) {
    const std::string bytes = builder.encode(compression);
    ChunkHeader header = *parse_chunk_header(bytes).value;
    std::string stored = bytes.substr(kChunkHeaderSize);
    const char* stored_memory = stored.data();
    DecodedChunk spare;
    spare.body.assign(10000, 'q');
    spare.record_starts.assign(50, 7);
    Parsed<DecodedChunk> chunk = decode_chunk_body(header, stored, std::move(spare));
    ASSERT_TRUE(chunk) << chunk.problem;
    ASSERT_EQ(chunk.value->size(), 2u);
    EXPECT_EQ(chunk.value->record(0), "first");
    EXPECT_EQ(chunk.value->record(1), std::string(3000, 'z'));
    if (compression == Compression::kNone) {
      EXPECT_EQ(chunk.value->body.data(), stored_memory);  // moved, not copied
    } else {
      EXPECT_EQ(stored, bytes.substr(kChunkHeaderSize));  // left for the next read
    }
  }
}

TEST(RecordIoFormat, InPlaceDecodeViewsUncompressedBytesAndChecksTheCrc) {
  ChunkBuilder builder;
  builder.add("first");
  builder.add(std::string(3000, 'z'));
  for (Compression compression : {Compression::kNone, Compression::kZstd}) {
    auto bytes = std::make_shared<std::string>(builder.encode(compression));
    ChunkHeader header = *parse_chunk_header(*bytes).value;
    const std::string_view stored = std::string_view(*bytes).substr(kChunkHeaderSize);
    DecodedChunk spare;  // a recycled chunk that viewed other bytes before
    spare.owner = std::make_shared<int>(1);
    spare.viewed = "stale";
    spare.body.assign(100, 'q');
    Parsed<DecodedChunk> chunk =
        decode_chunk_body_in_place(header, stored, bytes, std::move(spare));
    ASSERT_TRUE(chunk) << chunk.problem;
    ASSERT_EQ(chunk.value->size(), 2u);
    EXPECT_EQ(chunk.value->record(0), "first");
    EXPECT_EQ(chunk.value->record(1), std::string(3000, 'z'));
    if (compression == Compression::kNone) {
      EXPECT_EQ(chunk.value->bytes().data(), stored.data());  // viewed where it lies
      EXPECT_EQ(chunk.value->owner, bytes);                   // and kept alive
    } else {
      EXPECT_EQ(chunk.value->owner, nullptr);  // decompressed into owned memory
      EXPECT_EQ(chunk.value->bytes().data(), chunk.value->body.data());
    }
    std::string damaged = *bytes;
    damaged[kChunkHeaderSize + 7] ^= 0x01;
    Parsed<DecodedChunk> bad = decode_chunk_body_in_place(
        header, std::string_view(damaged).substr(kChunkHeaderSize), bytes, DecodedChunk{});
    EXPECT_FALSE(bad);
    EXPECT_NE(bad.problem.find("CRC mismatch"), std::string::npos) << bad.problem;
  }
}

}  // namespace
}  // namespace gradwire::data
