// IDX -> RecordIO conversion: records match the source images and labels byte for byte
// (synthetic files, and Fashion-MNIST when installed), image record encoding, bad IDX input.
#include "gradwire/data/idx_convert.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>

#include "gradwire/data/image_records.h"
#include "gradwire/data/recordio_reader.h"
#include "recordio_test_files.h"

namespace gradwire::data {
namespace {

using testing::write_bytes;

// An IDX file built by hand: big-endian dims after the 0x00000800+rank magic.
std::string idx_bytes(const std::vector<uint32_t>& dims, const std::string& data) {
  std::string out = {0, 0, 0x08, static_cast<char>(dims.size())};
  for (uint32_t dim : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(dim >> shift));
  }
  return out + data;
}

void write_gzip(const std::string& path, const std::string& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(file);
}

// Reads every record of the converted files in order.
std::vector<std::string> read_converted(const ConvertSummary& summary) {
  std::vector<std::string> records;
  for (const RecordFileSummary& file : summary.files) {
    RecordFileReader reader(file.path);
    while (auto record = reader.next_record()) records.emplace_back(*record);
  }
  return records;
}

// Raw IDX layout: images start at byte 16 (3 dims), labels at byte 8 (1 dim).
void expect_matches_source(const ConvertSummary& summary, const std::string& raw_images,
                           const std::string& raw_labels, size_t count, size_t rows, size_t cols) {
  const std::vector<std::string> records = read_converted(summary);
  ASSERT_EQ(records.size(), count);
  for (size_t i = 0; i < count; ++i) {
    const ImageRecord image = decode_image_record(records[i]);
    ASSERT_EQ(image.label, static_cast<uint8_t>(raw_labels[8 + i])) << "image " << i;
    ASSERT_EQ(image.rows, rows);
    ASSERT_EQ(image.cols, cols);
    ASSERT_EQ(image.pixels, std::string_view(raw_images).substr(16 + i * rows * cols, rows * cols))
        << "image " << i;
  }
}

TEST(IdxConvert, SyntheticFilesGzippedOrNotAcrossFiles) {
  testing::TempDir dir;
  std::string pixels, labels;
  for (int i = 0; i < 7 * 3 * 2; ++i) pixels.push_back(static_cast<char>(i * 37));
  for (int i = 0; i < 7; ++i) labels.push_back(static_cast<char>(i % 10));
  const std::string raw_images = idx_bytes({7, 3, 2}, pixels);
  const std::string raw_labels = idx_bytes({7}, labels);
  write_gzip(dir.file("images.gz"), raw_images);
  write_bytes(dir.file("labels"), raw_labels);
  ConvertOptions options;
  options.records_per_chunk = 2;
  options.files = 3;
  options.compression = Compression::kZstd;
  const ConvertSummary summary =
      convert_idx_to_recordio(dir.file("images.gz"), dir.file("labels"), dir.file("out"), options);
  ASSERT_EQ(summary.files.size(), 3u);
  EXPECT_EQ(summary.files[0].path, dir.file("out") + "-00000-of-00003.gwrio");
  EXPECT_EQ(summary.files[0].records + summary.files[1].records + summary.files[2].records, 7u);
  EXPECT_EQ(summary.files[2].chunks, 2u);  // 3 records, 2 per chunk
  expect_matches_source(summary, raw_images, raw_labels, 7, 3, 2);
}

TEST(IdxConvert, RejectsMismatchedOrMalformedInput) {
  testing::TempDir dir;
  write_bytes(dir.file("images"), idx_bytes({2, 2, 2}, std::string(8, 'x')));
  write_bytes(dir.file("labels3"), idx_bytes({3}, "abc"));
  write_bytes(dir.file("short"), idx_bytes({2, 2, 2}, std::string(7, 'x')));
  write_bytes(dir.file("text"), "not idx");
  EXPECT_THROW(convert_idx_to_recordio(dir.file("images"), dir.file("labels3"), dir.file("o"), {}),
               InvalidArgument);
  try {
    convert_idx_to_recordio(dir.file("short"), dir.file("labels3"), dir.file("o"), {});
    ADD_FAILURE();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("short")), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_idx("not idx", "text"), InvalidArgument);
  EXPECT_THROW(read_file_maybe_gzip(dir.file("missing")), InvalidArgument);
}

TEST(IdxConvert, ImageRecordRoundTripAndRejects) {
  const std::string record = encode_image_record(7, 2, 3, "abcdef");
  EXPECT_EQ(record.size(), kImageRecordHeaderSize + 6);
  const ImageRecord image = decode_image_record(record);
  EXPECT_EQ(image.label, 7);
  EXPECT_EQ(image.rows, 2);
  EXPECT_EQ(image.cols, 3);
  EXPECT_EQ(image.pixels, "abcdef");
  EXPECT_THROW(encode_image_record(1, 2, 3, "abc"), InvalidArgument);
  EXPECT_THROW(decode_image_record(record.substr(0, record.size() - 1)), InvalidArgument);
  EXPECT_THROW(decode_image_record("\x02" + record.substr(1)), InvalidArgument);
}

TEST(IdxConvert, FashionMnistTestSetMatchesTheSource) {
  const std::string root = "/usr/share/datasets/fashion-mnist/";
  const std::string images = root + "t10k-images-idx3-ubyte.gz";
  const std::string labels = root + "t10k-labels-idx1-ubyte.gz";
  if (!std::filesystem::exists(images) || !std::filesystem::exists(labels)) {
    GTEST_SKIP() << "Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)";
  }
  testing::TempDir dir;
  ConvertOptions options;
  options.files = 2;
  options.compression = Compression::kZstd;
  const ConvertSummary summary = convert_idx_to_recordio(images, labels, dir.file("t10k"), options);
  EXPECT_EQ(summary.records, 10000u);
  expect_matches_source(summary, read_file_maybe_gzip(images), read_file_maybe_gzip(labels), 10000,
                        28, 28);
}

}  // namespace
}  // namespace gradwire::data
