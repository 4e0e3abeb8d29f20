// The common file helpers: full writes, atomic replacement and its temporary files' names, output
// preparation; process liveness and byte order.
#include "gradwire/common/files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/byte_order.h"
#include "common/process.h"
#include "gradwire/common/error.h"

namespace gradwire {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gradwire-files-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  size_t entries() const {
    return static_cast<size_t>(
        std::distance(fs::directory_iterator(dir_), fs::directory_iterator()));
  }

  fs::path dir_;
};

TEST_F(FilesTest, AtomicWriteReplacesTheFileAndLeavesNoTemporary) {
  const std::string path = (dir_ / "a.txt").string();
  write_file_atomically(path, "old");
  write_file_atomically(path, "new content");
  EXPECT_EQ(read(path), "new content");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(FilesTest, AWriterDestroyedBeforeCommitKeepsTheOldFileAndRemovesItsTemporary) {
  const std::string path = (dir_ / "a.txt").string();
  write_file_atomically(path, "old");
  {
    AtomicFileWriter writer(path, "checkpoint");
    writer.write("half of the new");
  }
  EXPECT_EQ(read(path), "old");
  EXPECT_EQ(entries(), 1u);
}

// The file gets what open(2) gives any new file, 0666 less the umask (mkstemp's 0600 would hide
// checkpoints, traces and results from the rest of a team).
TEST_F(FilesTest, AnAtomicallyWrittenFileHasTheUmasksPermissions) {
  const std::string path = (dir_ / "a.txt").string();
  const mode_t previous = ::umask(022);
  write_file_atomically(path, "x");
  ::umask(027);
  const std::string other = (dir_ / "b.txt").string();
  write_file_atomically(other, "y");
  ::umask(previous);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ASSERT_EQ(::stat(other.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

// A temporary file names its writer: this host and the writer's pid, read back by
// temp_file_writer_here, so a crashed writer's leftover can be told from a live writer's.
TEST_F(FilesTest, ATemporaryFileNamesItsWriter) {
  const std::string path = (dir_ / "emb.tmp-7.gwps").string();
  AtomicFileWriter writer(path, "checkpoint");
  const std::string temp = fs::directory_iterator(dir_)->path().filename().string();
  const std::optional<TempFileWriter> named = temp_file_writer_here(temp);
  ASSERT_TRUE(named.has_value()) << temp;
  EXPECT_EQ(named->target, "emb.tmp-7.gwps");
  EXPECT_EQ(named->pid, ::getpid());
  EXPECT_THAT(temp, HasSubstr("-" + std::to_string(::getpid()) + "-"));
  const std::string marker = temp.substr(0, temp.rfind('-', temp.size() - 8) + 1);  // up to PID
  for (const std::string& other :
       {std::string("emb.gwps"), std::string(".emb.gwps.tmp-Ab12Cd"),
        ".emb.gwps.tmp-elsewhere-" + std::to_string(::getpid()) + "-Ab12Cd", temp.substr(1),
        marker + "x1-Ab12Cd", marker + "-Ab12Cd", marker + "12-Ab12C", temp + "x"}) {
    EXPECT_FALSE(temp_file_writer_here(other).has_value()) << other;
  }
}

TEST_F(FilesTest, AWriteIntoAMissingDirectoryNamesWhatAndWhere) {
  const std::string path = (dir_ / "missing" / "x.gwps").string();
  try {
    write_file_atomically(path, "bytes", "checkpoint");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot write checkpoint '" + path + "'"));
    EXPECT_THAT(error.what(), HasSubstr("No such file or directory"));
  }
}

TEST_F(FilesTest, PrepareOutputFileCreatesItsDirectoriesAndWritesNothing) {
  const fs::path path = dir_ / "results" / "deeper" / "out.json";
  prepare_output_file(path.string(), "results");
  EXPECT_TRUE(fs::is_directory(path.parent_path()));
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(path.parent_path()));
}

TEST_F(FilesTest, PrepareOutputFileFailsWhereNoDirectoryCanBeMade) {
  const fs::path blocker = dir_ / "plain-file";
  write_file_atomically(blocker.string(), "x");
  try {
    prepare_output_file((blocker / "out.json").string(), "results");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("results"));
    EXPECT_THAT(error.what(), HasSubstr((blocker / "out.json").string()));
  }
}

TEST_F(FilesTest, WriteFullyWritesEverythingAndReportsAClosedPipe) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  ASSERT_TRUE(write_fully(write_end.get(), "hello", 5));
  char got[5];
  ASSERT_EQ(::read(read_end.get(), got, 5), 5);
  EXPECT_EQ(std::string(got, 5), "hello");
  read_end.reset();
  ::signal(SIGPIPE, SIG_IGN);
  EXPECT_FALSE(write_fully(write_end.get(), "x", 1));
  EXPECT_EQ(errno, EPIPE);
}

TEST(Process, ALiveProcessIsNotGoneAZombieAndAReapedOneAre) {
  EXPECT_FALSE(process_gone(::getpid()));
  EXPECT_FALSE(process_gone(0));
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  // The child exits at once and stays a zombie until reaped.
  for (int i = 0; i < 2000 && !process_gone(child); ++i) ::usleep(1000);
  EXPECT_TRUE(process_gone(child)) << "a zombie counts as gone";
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(process_gone(child));
}

TEST(ByteOrder, LittleEndianRoundTripsAndBigEndianReadsIdx) {
  std::string bytes;
  put_le<uint32_t>(bytes, 0x01020304u);
  put_le<uint64_t>(bytes, 0x1122334455667788ull);
  ASSERT_EQ(bytes.size(), 12u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x04);
  EXPECT_EQ(get_le<uint32_t>(bytes, 0), 0x01020304u);
  EXPECT_EQ(get_le<uint64_t>(bytes, 4), 0x1122334455667788ull);
  EXPECT_EQ(get_be32(std::string("\x00\x00\x08\x03", 4), 0), 0x0803u);
}

}  // namespace
}  // namespace gradwire
