// gradwire-bench data: generated records, file sets, raw read shares and the raw read.
#include "cases/data_bench_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "gradwire/common/error.h"
#include "gradwire/data/recordio_inspect.h"  // crc32_of
#include "gradwire/data/recordio_reader.h"

namespace gradwire::bench {
namespace {

namespace fs = std::filesystem;

std::string scratch(const std::string& name) {
  const fs::path path =
      fs::path(::testing::TempDir()) / ("data_bench_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(path);
  return path.string();
}

TEST(DataBenchFilesTest, GeneratedRecordsAreDeterministicAndSizedAroundTheMean) {
  std::uint64_t total = 0;
  for (std::uint64_t i = 0; i < 2000; ++i) {
    const std::uint64_t size = generated_record_size(i, 1000);
    EXPECT_GE(size, 500u);
    EXPECT_LE(size, 1500u);
    total += size;
  }
  EXPECT_NEAR(static_cast<double>(total) / 2000, 1000.0, 50.0);
  EXPECT_EQ(generated_record(7, 100), generated_record(7, 100));
  EXPECT_NE(generated_record(7, 100), generated_record(8, 100));
  for (const char c : generated_record(3, 300)) {
    EXPECT_GE(c, 'a');
    EXPECT_LE(c, 'p');
  }
  EXPECT_GE(generated_record_size(0, 1), 1u);
}

TEST(DataBenchFilesTest, RawReadSharesSplitTheBytesExactly) {
  const std::vector<std::uint64_t> sizes = {10, 0, 7};
  EXPECT_EQ(raw_read_share(sizes, 0, 1), (std::vector<ByteRange>{{0, 0, 10}, {2, 0, 7}}));
  // 17 bytes over 2 ranks: [0, 8) and [8, 17).
  EXPECT_EQ(raw_read_share(sizes, 0, 2), (std::vector<ByteRange>{{0, 0, 8}}));
  EXPECT_EQ(raw_read_share(sizes, 1, 2), (std::vector<ByteRange>{{0, 8, 2}, {2, 0, 7}}));
  for (int ranks = 1; ranks <= 5; ++ranks) {
    std::uint64_t covered = 0;
    for (int rank = 0; rank < ranks; ++rank) {
      for (const auto& range : raw_read_share(sizes, rank, ranks)) covered += range.length;
    }
    EXPECT_EQ(covered, 17u) << ranks;
  }
  EXPECT_THROW(raw_read_share(sizes, 2, 2), InvalidArgument);
}

TEST(DataBenchFilesTest, GeneratedSetHoldsTheBytesInEveryFileAndCompresses) {
  GeneratedSpec spec;
  spec.bytes = 300000;
  spec.files = 3;
  spec.mean_record_bytes = 1000;
  spec.chunk_bytes = 32768;
  const std::string plain_dir = scratch("plain");
  const std::string zstd_dir = scratch("zstd");
  const auto plain = write_generated_set(plain_dir, spec, data::Compression::kNone);
  const auto packed = write_generated_set(zstd_dir, spec, data::Compression::kZstd);
  ASSERT_EQ(plain.size(), 3u);
  EXPECT_EQ(list_record_files(plain_dir), plain);
  EXPECT_EQ(fs::path(plain[1]).filename(), "generated-00001-of-00003.gwrio");

  const FileSetFacts plain_facts = describe_file_set(plain);
  const FileSetFacts packed_facts = describe_file_set(packed);
  EXPECT_EQ(plain_facts.compression, "none");
  EXPECT_EQ(packed_facts.compression, "zstd");
  EXPECT_EQ(plain_facts.records, packed_facts.records);
  EXPECT_GT(plain_facts.chunks, 3u);
  EXPECT_GT(plain_facts.file_bytes, 300000u);
  EXPECT_LT(packed_facts.file_bytes, plain_facts.file_bytes * 3 / 4);  // 16 letters: ~2:1

  std::uint64_t payload = 0;
  std::uint64_t index = 0;
  for (const auto& path : plain) {
    data::RecordFileReader reader(path);
    std::uint64_t in_file = 0;
    while (auto record = reader.next_record()) {
      EXPECT_EQ(*record, generated_record(index++, 1000));
      in_file += record->size();
    }
    EXPECT_GE(in_file, 100000u);
    EXPECT_LT(in_file, 100000u + 1500u);
    payload += in_file;
  }
  EXPECT_EQ(index, plain_facts.records);

  EXPECT_EQ(read_raw(plain, raw_read_share(file_sizes(plain), 0, 1), false, 4096).bytes,
            plain_facts.file_bytes);
  std::uint64_t halves = 0;
  for (int rank = 0; rank < 2; ++rank) {
    halves += read_raw(plain, raw_read_share(file_sizes(plain), rank, 2), false, 1000).bytes;
  }
  EXPECT_EQ(halves, plain_facts.file_bytes);

  // With checksum, one buffer holding the whole file: the CRC-32 of the file.
  std::ifstream in(packed[0], std::ios::binary);
  const std::string contents((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  const RawRead read = read_raw({packed[0]}, {{0, 0, contents.size()}}, true, contents.size() + 1);
  EXPECT_EQ(read.bytes, contents.size());
  EXPECT_EQ(read.crc, data::crc32_of(contents));
  EXPECT_EQ(read_raw({packed[0]}, {{0, 0, contents.size()}}).crc, 0u);  // no checksum asked
  fs::remove_all(plain_dir);
  fs::remove_all(zstd_dir);
}

TEST(DataBenchFilesTest, MissingInputsAreNamed) {
  const std::string empty = scratch("empty");
  fs::create_directories(empty);
  try {
    list_record_files(empty);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("holds no .gwrio files"), std::string::npos) << e.what();
  }
  try {
    convert_fashion_mnist(empty, empty + "/out", 1, 1024, data::Compression::kNone);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("train-images-idx3-ubyte.gz is missing"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(read_raw({empty + "/nothing.gwrio"}, {{0, 0, 10}}), BackendError);
  fs::remove_all(empty);
}

}  // namespace
}  // namespace gradwire::bench
