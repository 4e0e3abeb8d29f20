// Checkpoint files: round trip, every flipped byte caught by the CRC, truncation named, layout
// problems named with their byte offset, the header length bounded and the header's bytes checked
// before they are parsed, atomic writes, the temporary files of crashed writers, listing.
#include "ps/core/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "common/byte_order.h"
#include "common/process.h"
#include "gradwire/common/error.h"
#include "gradwire/common/files.h"

namespace gradwire::ps {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Replaces the trailing CRC-32 with the one of the bytes before it.
std::string with_fixed_crc(std::string bytes) {
  bytes.resize(bytes.size() - 4);
  const auto crc = static_cast<uint32_t>(
      crc32_z(crc32_z(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  return bytes;
}

// The message of the Error read_checkpoint(path) throws ("" when it reads fine).
std::string read_error(const std::string& path) {
  try {
    read_checkpoint(path);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gwps-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A trained shard of an Adam table (state: exp_avg, exp_avg_sq).
  static std::unique_ptr<TableShard> trained_shard(int64_t rows = 7, int64_t dim = 3) {
    TableConfig config;
    config.name = "emb";
    config.num_rows = rows;
    config.dim = dim;
    config.optimizer.kind = OptimizerKind::kAdam;
    config.optimizer.lr = 0.05;
    config.initializer.seed = 12345678901234567ULL;
    config.initializer.scale = 0.3;
    config.mode = UpdateMode::kSync;
    config.reduction = GradientReduction::kSum;
    auto shard = std::make_unique<TableShard>(config, 1, 2);
    for (int64_t step = 0; step < 3; ++step) {
      const at::Tensor ids = at::arange(1, rows, 2, at::kLong);
      shard->push(0, step, ids, at::randn({ids.numel(), dim}));
      shard->finish_step(0, step, std::chrono::steady_clock::now());
    }
    return shard;
  }

  std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string dir_;
};

TEST_F(CheckpointTest, FileNames) {
  EXPECT_EQ(checkpoint_file_name("emb", 0, 2), "emb.shard0of2.gwps");
  EXPECT_EQ(checkpoint_file_name("user.v2", 11, 12), "user.v2.shard11of12.gwps");
}

TEST_F(CheckpointTest, RoundTripKeepsEverything) {
  const auto shard = trained_shard();
  const ShardSnapshot written = shard->snapshot();
  const std::string file = path(checkpoint_file_name("emb", 1, 2));
  write_checkpoint(file, written);
  EXPECT_THAT(files(), ElementsAre("emb.shard1of2.gwps"));  // no temporary file left
  const ShardSnapshot read = read_checkpoint(file);
  EXPECT_TRUE(same_table(read.config, written.config));
  EXPECT_EQ(read.config.initializer.seed, 12345678901234567ULL);
  EXPECT_EQ(read.server_index, 1);
  EXPECT_EQ(read.num_servers, 2);
  EXPECT_EQ(read.step, 3);
  EXPECT_TRUE(at::equal(read.weights, written.weights));
  ASSERT_EQ(read.optimizer_state.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(read.optimizer_state[i].first, written.optimizer_state[i].first);
    EXPECT_TRUE(at::equal(read.optimizer_state[i].second, written.optimizer_state[i].second));
  }
  // A restored shard continues like the original.
  auto restored = TableShard::restore(read);
  const at::Tensor ids = at::arange(1, 7, 2, at::kLong);
  EXPECT_TRUE(at::equal(restored->lookup(ids), shard->lookup(ids)));
  // Writing again replaces the file.
  write_checkpoint(file, restored->snapshot());
  EXPECT_EQ(read_checkpoint(file).step, 3);
  EXPECT_THAT(files(), ElementsAre("emb.shard1of2.gwps"));
}

TEST_F(CheckpointTest, EveryFlippedByteFailsTheCrcCheck) {
  const std::string good = path("good.gwps");
  write_checkpoint(good, trained_shard(5, 2)->snapshot());
  const std::string bytes = read_bytes(good);
  ASSERT_GT(bytes.size(), 100u);
  const std::string bad = path("bad.gwps");
  for (size_t offset = 0; offset < bytes.size(); ++offset) {
    std::string flipped = bytes;
    flipped[offset] = static_cast<char>(flipped[offset] ^ 0x5A);
    write_bytes(bad, flipped);
    const std::string message = read_error(bad);
    EXPECT_THAT(message, HasSubstr("'" + bad + "'")) << "byte " << offset;
    EXPECT_THAT(message, HasSubstr("CRC-32")) << "byte " << offset;
  }
}

// A file cut before the end of its header is named truncated. One cut later is a CRC mismatch:
// only the header, which cannot be trusted before the CRC matched, says how long the file should
// be (Note [header before CRC] in checkpoint.cpp).
TEST_F(CheckpointTest, TruncationIsNamed) {
  const std::string good = path("good.gwps");
  write_checkpoint(good, trained_shard()->snapshot());
  const std::string bytes = read_bytes(good);
  const size_t header_end = 20 + get_le<uint64_t>(bytes, 12);
  ASSERT_LT(bytes.size() / 2, header_end);
  const std::string cut = path("cut.gwps");
  for (size_t size :
       {size_t{0}, size_t{7}, size_t{23}, size_t{30}, bytes.size() / 2, header_end + 3}) {
    write_bytes(cut, bytes.substr(0, size));
    const std::string message = read_error(cut);
    EXPECT_THAT(message, HasSubstr("'" + cut + "' is truncated")) << size << " bytes";
  }
  for (size_t size : {header_end + 4, bytes.size() - 4, bytes.size() - 1}) {
    write_bytes(cut, bytes.substr(0, size));
    const std::string message = read_error(cut);
    EXPECT_THAT(message, HasSubstr("'" + cut + "' is corrupt: CRC-32 mismatch")) << size;
    EXPECT_THAT(message, HasSubstr("a file cut short fails this check too")) << size;
  }
}

TEST_F(CheckpointTest, LayoutProblemsNameTheByteOffset) {
  const std::string good = path("good.gwps");
  write_checkpoint(good, trained_shard()->snapshot());
  const std::string bytes = read_bytes(good);
  const std::string other = path("other.gwps");
  // A valid CRC, so these are not corruption but files this code cannot read.
  std::string magic = bytes;
  magic.replace(0, 8, "NOTACKPT");
  write_bytes(other, with_fixed_crc(magic));
  EXPECT_THAT(read_error(other), HasSubstr("invalid at byte 0: bad magic"));
  std::string version = bytes;
  version[8] = 2;
  write_bytes(other, with_fixed_crc(version));
  EXPECT_THAT(read_error(other), HasSubstr("invalid at byte 8: unknown version 2"));
  std::string longer = bytes;
  longer.insert(longer.size() - 4, "xyz");
  write_bytes(other, with_fixed_crc(longer));
  EXPECT_THAT(read_error(other), HasSubstr("sizes disagree"));
  // A header whose tensor is larger than the file: refused before allocating anything.
  std::string huge = bytes;
  const size_t shape_at = huge.find("\"shape\":[3,3]");
  ASSERT_NE(shape_at, std::string::npos);
  huge.replace(shape_at, 13, "\"shape\":[9,9]");
  write_bytes(other, with_fixed_crc(huge));
  EXPECT_THAT(read_error(other),
              HasSubstr("at byte 20: header field 'tensors[0].shape' describes more bytes"));
  // A plain text file.
  write_bytes(other, "this is not a checkpoint, just some text");
  EXPECT_THAT(read_error(other), HasSubstr("bad magic"));
  EXPECT_THAT(read_error(path("missing.gwps")), HasSubstr("cannot open checkpoint"));
}

// The header length is bounded by the file's size and by kMaxHeaderBytes (1 MiB) before a byte
// of the header is allocated or read.
TEST_F(CheckpointTest, AHeaderLengthBeyondTheLimitIsRefusedAtItsOffset) {
  const auto file_declaring = [](uint64_t header_length, size_t header_bytes) {
    std::string bytes("GWPSCKPT", 8);
    put_le<uint32_t>(bytes, 1);
    put_le<uint64_t>(bytes, header_length);
    bytes.append(header_bytes, ' ');
    bytes.append("CRC!");
    return bytes;
  };
  const std::string other = path("other.gwps");
  // 4 MiB of header, all there: the file's size allows it, the limit does not.
  write_bytes(other, with_fixed_crc(file_declaring(4 << 20, 4 << 20)));
  std::string message = read_error(other);
  EXPECT_THAT(message, HasSubstr("'" + other +
                                 "' is invalid at byte 12: the header length "
                                 "4194304 is above the limit of 1048576 bytes"));
  // The same, damaged: still refused at byte 12, as corrupt.
  write_bytes(other, file_declaring(4 << 20, 4 << 20));
  message = read_error(other);
  EXPECT_THAT(message, HasSubstr("'" + other + "' is corrupt: CRC-32 mismatch"));
  EXPECT_THAT(message, HasSubstr("at byte 12: the header length 4194304 is above the limit"));
  // A length field of 2^63 in a small file: the file cannot hold it.
  write_bytes(other, file_declaring(uint64_t{1} << 63, 100));
  message = read_error(other);
  EXPECT_THAT(message, HasSubstr("'" + other + "' is truncated"));
  EXPECT_THAT(message, HasSubstr("at byte 12: the header length 9223372036854775808"));
}

// Note [header before CRC]: the header's bytes are CRC-checked before they are parsed, so a
// damaged header is reported as damage, never as what a parse of the damaged bytes found.
TEST_F(CheckpointTest, ADamagedHeaderIsNotParsed) {
  const std::string good = path("good.gwps");
  write_checkpoint(good, trained_shard()->snapshot());
  const std::string bytes = read_bytes(good);
  const std::string bad = path("bad.gwps");
  // Not JSON any more.
  std::string broken = bytes;
  ASSERT_EQ(broken[20], '{');
  broken[20] = 'X';
  write_bytes(bad, broken);
  std::string message = read_error(bad);
  EXPECT_THAT(message, HasSubstr("'" + bad + "' is corrupt: CRC-32 mismatch"));
  EXPECT_THAT(message, Not(HasSubstr("JSON")));
  // Still JSON, declaring a tensor larger than the file.
  std::string larger = bytes;
  const size_t shape_at = larger.find("\"shape\":[3,3]");
  ASSERT_NE(shape_at, std::string::npos);
  larger.replace(shape_at, 13, "\"shape\":[9,9]");
  write_bytes(bad, larger);
  message = read_error(bad);
  EXPECT_THAT(message, HasSubstr("'" + bad + "' is corrupt: CRC-32 mismatch"));
  EXPECT_THAT(message, Not(HasSubstr("tensors[0].shape")));
}

TEST_F(CheckpointTest, FailedWriteLeavesTheExistingFileIntact) {
  const std::string file = path("emb.shard1of2.gwps");
  write_checkpoint(file, trained_shard()->snapshot());
  const std::string before = read_bytes(file);
  // A write that fails halfway: files may not grow past 4 KiB, the new one needs more.
  ShardSnapshot big = trained_shard(2000, 8)->snapshot();
  rlimit old_limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old_limit;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  try {
    write_checkpoint(file, big);
  } catch (const Error& error) {
    message = error.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_THAT(message, HasSubstr("cannot write checkpoint '" + file + "'"));
  EXPECT_EQ(read_bytes(file), before);
  EXPECT_THAT(files(), ElementsAre("emb.shard1of2.gwps"));  // the temporary file is gone
  EXPECT_EQ(read_checkpoint(file).step, 3);
  // A directory that does not exist.
  const std::string nowhere = path("no/such/dir/emb.shard0of1.gwps");
  try {
    write_checkpoint(nowhere, big);
    FAIL() << "expected an Error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("'" + nowhere + "'"));
  }
}

// A writer killed halfway (by SIGXFSZ at a small file-size limit, as a crash would) leaves its
// temporary file behind, named for this host and its pid; once the writer is gone,
// remove_stale_checkpoint_temps removes it. A live writer's file, another host's, an older
// gradwire's (no writer in the name) and other programs' files stay.
TEST_F(CheckpointTest, TemporaryFilesOfDeadWritersAreRemovedAndLiveOnesKept) {
  const std::string file = path("emb.shard1of2.gwps");
  write_checkpoint(file, trained_shard()->snapshot());
  const std::string before = read_bytes(file);
  const ShardSnapshot big = trained_shard(2000, 8)->snapshot();
  const pid_t writer = ::fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    const rlimit no_core{0, 0};
    const rlimit small{4096, 4096};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::setrlimit(RLIMIT_FSIZE, &small);
    ::signal(SIGXFSZ, SIG_DFL);
    try {
      write_checkpoint(file, big);
    } catch (...) {
    }
    ::_exit(3);  // not reached: SIGXFSZ ends the writer
  }
  int status = 0;
  ASSERT_EQ(::waitpid(writer, &status, 0), writer);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ) << "status " << status;

  std::string crashed;
  for (const std::string& name : files()) {
    if (name != "emb.shard1of2.gwps") crashed = name;
  }
  ASSERT_EQ(files().size(), 2u) << "the crashed writer left no temporary file";
  const std::optional<TempFileWriter> named = temp_file_writer_here(crashed);
  ASSERT_TRUE(named.has_value()) << crashed;
  EXPECT_EQ(named->target, "emb.shard1of2.gwps");
  EXPECT_EQ(named->pid, writer);

  AtomicFileWriter live(path("user.shard0of1.gwps"), "checkpoint");  // this process: alive
  live.write("half of a checkpoint");
  const std::string dead = std::to_string(writer);
  const std::string kept[] = {
      ".emb.shard0of2.gwps.tmp-elsewhere.example-" + dead + "-Ab12Cd",  // another host's
      ".emb.shard0of2.gwps.tmp-Ab12Cd",                                 // an older gradwire's
      ".notes.txt" + crashed.substr(crashed.find(".tmp-")),             // not a checkpoint's
  };
  for (const std::string& name : kept) write_bytes(path(name), "x");
  const size_t files_before = files().size();

  EXPECT_THAT(remove_stale_checkpoint_temps(dir_), ElementsAre(path(crashed)));
  EXPECT_EQ(files().size(), files_before - 1);
  for (const std::string& name : kept) EXPECT_TRUE(fs::exists(path(name))) << name;
  EXPECT_EQ(read_bytes(file), before);
  EXPECT_TRUE(remove_stale_checkpoint_temps(dir_).empty());  // the live writer's stays
  live.commit();
  EXPECT_EQ(read_bytes(path("user.shard0of1.gwps")), "half of a checkpoint");
  EXPECT_TRUE(remove_stale_checkpoint_temps(path("absent")).empty());
}

TEST_F(CheckpointTest, ListsCheckpointFilesSorted) {
  EXPECT_TRUE(list_checkpoints(path("absent")).empty());
  const ShardSnapshot snapshot = trained_shard()->snapshot();
  write_checkpoint(path("b.shard0of1.gwps"), snapshot);
  write_checkpoint(path("a.shard1of2.gwps"), snapshot);
  write_bytes(path("notes.txt"), "x");
  fs::create_directory(path("dir.gwps"));
  EXPECT_THAT(list_checkpoints(dir_),
              ElementsAre(path("a.shard1of2.gwps"), path("b.shard0of1.gwps")));
  EXPECT_THROW(list_checkpoints(path("notes.txt")), Error);
}

}  // namespace
}  // namespace gradwire::ps
