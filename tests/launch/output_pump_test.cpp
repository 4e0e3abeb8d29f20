// Unit tests of the output pump with in-process pipes: prefixing, partial lines, long lines,
// log files.
#include "launch/output_pump.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include "test_support.h"

namespace gradwire::launch::detail {
namespace {

using testing::read_file;
using testing::TempDir;

struct PipePair {
  UniqueFd read;
  UniqueFd write;
};

PipePair make_pipe() {
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

UniqueFd open_for_writing(const std::string& path) {
  return UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
}

void write_text(const UniqueFd& fd, const std::string& text) {
  ASSERT_TRUE(write_fully(fd.get(), text.data(), text.size()));
}

// Runs the pump until every pipe is closed (bounded: the writers are closed already).
void drain(OutputPump& pump) {
  for (int round = 0; round < 10000 && !pump.all_closed(); ++round) {
    std::vector<pollfd> fds;
    for (int fd : pump.fds()) fds.push_back({fd, POLLIN, 0});
    ASSERT_GT(::poll(fds.data(), fds.size(), 1000), 0);
    for (const pollfd& entry : fds) {
      if (entry.revents != 0) pump.on_readable(entry.fd);
    }
  }
  ASSERT_TRUE(pump.all_closed());
}

class OutputPumpTest : public ::testing::Test {
 protected:
  TempDir dir_;
  UniqueFd out_ = open_for_writing(dir_.file("out"));
  UniqueFd err_ = open_for_writing(dir_.file("err"));
};

TEST_F(OutputPumpTest, PrefixesWholeLinesOnMatchingStream) {
  OutputPump pump({/*prefix_output=*/true, out_.get(), err_.get()});
  PipePair rank0_out = make_pipe(), rank0_err = make_pipe();
  PipePair rank1_out = make_pipe(), rank1_err = make_pipe();
  pump.add_worker(0, std::move(rank0_out.read), std::move(rank0_err.read), UniqueFd());
  pump.add_worker(1, std::move(rank1_out.read), std::move(rank1_err.read), UniqueFd());

  write_text(rank0_out.write, "hello ");
  write_text(rank1_out.write, "one\n");
  write_text(rank0_out.write, "world\nsecond\n");
  write_text(rank0_err.write, "warning\nno newline");
  for (PipePair* pipe : {&rank0_out, &rank0_err, &rank1_out, &rank1_err}) pipe->write.reset();
  drain(pump);

  const std::string out = read_file(dir_.file("out"));
  EXPECT_NE(out.find("[rank 0] hello world\n[rank 0] second\n"), std::string::npos) << out;
  EXPECT_NE(out.find("[rank 1] one\n"), std::string::npos) << out;
  EXPECT_EQ(read_file(dir_.file("err")), "[rank 0] warning\n[rank 0] no newline\n");
}

TEST_F(OutputPumpTest, NoPrefixKeepsLinesWhole) {
  OutputPump pump({/*prefix_output=*/false, out_.get(), err_.get()});
  PipePair rank_out = make_pipe(), rank_err = make_pipe();
  pump.add_worker(3, std::move(rank_out.read), std::move(rank_err.read), UniqueFd());
  write_text(rank_out.write, "a\nb");
  rank_out.write.reset();
  rank_err.write.reset();
  drain(pump);
  EXPECT_EQ(read_file(dir_.file("out")), "a\nb\n");
  EXPECT_EQ(read_file(dir_.file("err")), "");
}

TEST_F(OutputPumpTest, LogFileGetsBothStreamsUnprefixed) {
  OutputPump pump({/*prefix_output=*/true, out_.get(), err_.get()});
  PipePair rank_out = make_pipe(), rank_err = make_pipe();
  pump.add_worker(2, std::move(rank_out.read), std::move(rank_err.read),
                  open_for_writing(dir_.file("rank_2.log")));
  write_text(rank_out.write, "out line\n");
  write_text(rank_err.write, "err line\n");
  write_text(rank_out.write, "tail");
  rank_out.write.reset();
  rank_err.write.reset();
  drain(pump);
  const std::string log = read_file(dir_.file("rank_2.log"));
  EXPECT_NE(log.find("out line\n"), std::string::npos) << log;
  EXPECT_NE(log.find("err line\n"), std::string::npos) << log;
  EXPECT_NE(log.find("tail"), std::string::npos) << log;
  EXPECT_EQ(log.find("[rank"), std::string::npos) << log;
}

TEST_F(OutputPumpTest, OverlongLineIsSplitIntoPrefixedPieces) {
  OutputPump pump({/*prefix_output=*/true, out_.get(), err_.get()});
  PipePair rank_out = make_pipe(), rank_err = make_pipe();
  pump.add_worker(0, std::move(rank_out.read), std::move(rank_err.read), UniqueFd());
  rank_err.write.reset();
  const std::string line(OutputPump::kMaxLineBytes + 100, 'x');
  std::string written;
  // Write in pieces the pipe can take, pumping in between.
  while (written.size() < line.size() || !pump.all_closed()) {
    if (written.size() < line.size()) {
      const size_t piece = std::min<size_t>(4096, line.size() - written.size());
      write_text(rank_out.write, line.substr(written.size(), piece));
      written += line.substr(written.size(), piece);
      if (written.size() == line.size()) rank_out.write.reset();
    }
    std::vector<pollfd> fds;
    for (int fd : pump.fds()) fds.push_back({fd, POLLIN, 0});
    if (fds.empty()) break;
    ASSERT_GT(::poll(fds.data(), fds.size(), 1000), 0);
    for (const pollfd& entry : fds) {
      if (entry.revents != 0) pump.on_readable(entry.fd);
    }
  }
  const std::string out = read_file(dir_.file("out"));
  const auto lines = testing::split_lines(out);
  ASSERT_EQ(lines.size(), 2u) << out.size();
  EXPECT_EQ(lines[0], "[rank 0] " + std::string(OutputPump::kMaxLineBytes, 'x'));
  EXPECT_EQ(lines[1], "[rank 0] " + std::string(100, 'x'));
}

TEST_F(OutputPumpTest, ClosedTargetIsDroppedWithoutFailing) {
  PipePair target = make_pipe();
  target.read.reset();  // writes to target.write now fail with EPIPE (SIGPIPE blocked below)
  sigset_t sigpipe, original;
  sigemptyset(&sigpipe);
  sigaddset(&sigpipe, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &sigpipe, &original);
  {
    OutputPump pump({/*prefix_output=*/true, target.write.get(), err_.get()});
    PipePair rank_out = make_pipe(), rank_err = make_pipe();
    pump.add_worker(0, std::move(rank_out.read), std::move(rank_err.read),
                    open_for_writing(dir_.file("rank_0.log")));
    write_text(rank_out.write, "first\nsecond\n");
    rank_out.write.reset();
    rank_err.write.reset();
    drain(pump);
  }
  timespec no_wait{};
  ::sigtimedwait(&sigpipe, nullptr, &no_wait);  // discard the SIGPIPE raised
  ::pthread_sigmask(SIG_SETMASK, &original, nullptr);
  EXPECT_EQ(read_file(dir_.file("rank_0.log")), "first\nsecond\n");
}

}  // namespace
}  // namespace gradwire::launch::detail
