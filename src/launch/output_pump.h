// Copies the output of workers and servers to the launcher's stdout/stderr, whole lines at a time,
// optionally prefixed with "[rank N] " or "[server N] ", and to per-process log files
// (launch-internal). An unterminated last
// line (or a piece of an over-long one) gets a newline on stdout/stderr; log files get the
// bytes exactly as the worker wrote them.
//
// The pump never blocks on a worker: the caller polls fds() and calls on_readable(). Writes to
// the targets block (a full terminal pipe slows the workers down, as it would without a
// launcher). A target that fails (EPIPE...) is dropped, the others keep working; SIGPIPE must be
// blocked by the caller. Not thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gradwire/common/files.h"

namespace gradwire::launch::detail {

struct OutputPumpOptions {
  bool prefix_output = true;  // "[LABEL] " before each line on stdout_fd/stderr_fd
  int stdout_fd = 1;          // not owned
  int stderr_fd = 2;          // not owned
};

class OutputPump {
 public:
  // A line longer than this is written in pieces of this size.
  static constexpr size_t kMaxLineBytes = 64 * 1024;

  explicit OutputPump(OutputPumpOptions options);
  ~OutputPump();
  OutputPump(const OutputPump&) = delete;
  OutputPump& operator=(const OutputPump&) = delete;

  // Takes ownership of a process's output pipes and, when valid, of its log file (which gets
  // both streams, unprefixed). `label` names the process in prefixes and messages ("rank 3",
  // "server 0") and must be unique.
  void add_source(const std::string& label, UniqueFd stdout_read, UniqueFd stderr_read,
                  UniqueFd log_file);
  // add_source("rank RANK", ...).
  void add_worker(int rank, UniqueFd stdout_read, UniqueFd stderr_read, UniqueFd log_file);

  // The pipe read ends still open.
  std::vector<int> fds() const;
  bool all_closed() const { return streams_.empty(); }

  // Reads what is available on `fd` (one of fds()) and writes the complete lines; at end of file
  // flushes the partial last line and closes the pipe.
  void on_readable(int fd);

  // Flushes partial lines and closes every pipe (used when stragglers keep a pipe open).
  void close_all();

 private:
  struct Stream;
  void add_stream(const std::string& label, UniqueFd pipe, bool is_stderr);
  void emit(Stream& stream, const char* data, size_t size, bool at_eof);
  void write_target(int& target_fd, const std::string& data);

  OutputPumpOptions options_;
  int stdout_target_;  // -1 once a write to it failed
  int stderr_target_;
  std::map<int, std::unique_ptr<Stream>> streams_;  // by pipe fd
  std::map<std::string, UniqueFd> log_files_;       // by label
};

// LOG_DIR/NAME for each name (LOG_DIR created if needed, files truncated), in order; invalid fds
// when `log_dir` is empty. Throws gradwire::Error naming the directory or file that failed.
std::vector<UniqueFd> open_log_files(const std::string& log_dir,
                                     const std::vector<std::string>& names);

}  // namespace gradwire::launch::detail
