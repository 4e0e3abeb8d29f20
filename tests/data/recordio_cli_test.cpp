// gradwire-recordio: convert, inspect, and verify's exit codes on intact and damaged files.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>

#include "data/chunk_file.h"
#include "gradwire/data/recordio_reader.h"
#include "recordio_test_files.h"

namespace gradwire::data {
namespace {

using testing::read_bytes;
using testing::write_bytes;

struct CliResult {
  int exit_code = -1;
  std::string output;
};

CliResult run_cli(const testing::TempDir& dir, const std::string& arguments) {
  const std::string out = dir.file("cli-output");
  const std::string command =
      std::string("timeout 60 ") + RECORDIO_CLI_PATH + " " + arguments + " > " + out + " 2>&1";
  const int status = std::system(command.c_str());
  return CliResult{WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_bytes(out)};
}

TEST(RecordIoCli, VerifyExitCodesOnIntactDamagedAndTruncatedFiles) {
  testing::TempDir dir;
  const std::string path = dir.file("data.gwrio");
  testing::write_test_file(path, 0, 100, 10, Compression::kZstd);
  CliResult intact = run_cli(dir, "verify " + path);
  EXPECT_EQ(intact.exit_code, 0) << intact.output;
  EXPECT_NE(intact.output.find("OK"), std::string::npos) << intact.output;

  CliResult inspect = run_cli(dir, "inspect " + path);
  EXPECT_EQ(inspect.exit_code, 0) << inspect.output;
  EXPECT_NE(inspect.output.find("10 chunks, 100 records"), std::string::npos) << inspect.output;
  EXPECT_NE(inspect.output.find("zstd"), std::string::npos) << inspect.output;

  const uint64_t offset = ChunkFile(path).chunks()[6].offset;
  const std::string whole = read_bytes(path);
  std::string damaged = whole;
  damaged[offset + kChunkHeaderSize + 2] ^= 0x01;
  write_bytes(path, damaged);
  CliResult bad = run_cli(dir, "verify " + path);
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find(path + ": chunk 6 at byte " + std::to_string(offset)),
            std::string::npos)
      << bad.output;
  EXPECT_NE(bad.output.find("CRC mismatch"), std::string::npos) << bad.output;

  write_bytes(path, whole.substr(0, offset + 3));
  CliResult cut = run_cli(dir, "verify " + path);
  EXPECT_EQ(cut.exit_code, 1) << cut.output;
  EXPECT_NE(cut.output.find("chunk 6 at byte " + std::to_string(offset)), std::string::npos)
      << cut.output;

  EXPECT_EQ(run_cli(dir, "verify " + dir.file("missing")).exit_code, 1);
  EXPECT_EQ(run_cli(dir, "verify").exit_code, 2);
  EXPECT_EQ(run_cli(dir, "frobnicate").exit_code, 2);
}

TEST(RecordIoCli, ConvertsIdxFiles) {
  testing::TempDir dir;
  // 4 images of 2x2 and their labels, uncompressed IDX.
  std::string images = {0, 0, 8, 3, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 2};
  images.append(16, '\x7f');
  write_bytes(dir.file("images"), images);
  write_bytes(dir.file("labels"), std::string{0, 0, 8, 1, 0, 0, 0, 4, 1, 2, 3, 4});
  CliResult convert =
      run_cli(dir, "convert " + dir.file("images") + " " + dir.file("labels") + " " +
                       dir.file("out") + " --records-per-chunk 3 --compress zstd --files 2");
  ASSERT_EQ(convert.exit_code, 0) << convert.output;
  const std::string first = dir.file("out") + "-00000-of-00002.gwrio";
  CliResult verify =
      run_cli(dir, "verify " + first + " " + dir.file("out") + "-00001-of-00002.gwrio");
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
  EXPECT_EQ(RecordFileReader(first).record_count(), 2u);
  EXPECT_EQ(run_cli(dir, "convert " + dir.file("images") + " " + dir.file("labels") +
                             " x --compress gzip")
                .exit_code,
            2);
}

TEST(RecordIoCli, ConvertCreatesTheDirectoriesOfItsOutputPrefix) {
  testing::TempDir dir;
  std::string images = {0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2};
  images.append(4, '\x10');
  write_bytes(dir.file("images"), images);
  write_bytes(dir.file("labels"), std::string{0, 0, 8, 1, 0, 0, 0, 1, 7});
  const std::string prefix = dir.file("data") + "/fashion/test";
  CliResult convert =
      run_cli(dir, "convert " + dir.file("images") + " " + dir.file("labels") + " " + prefix);
  ASSERT_EQ(convert.exit_code, 0) << convert.output;
  EXPECT_EQ(RecordFileReader(prefix + "-00000-of-00001.gwrio").record_count(), 1u);
}

}  // namespace
}  // namespace gradwire::data
