#include "output_pump.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "gradwire/common/error.h"

namespace gradwire::launch::detail {

struct OutputPump::Stream {
  UniqueFd pipe;
  std::string label;  // "rank N", "server N"
  bool is_stderr = false;
  std::string prefix;   // "[LABEL] " or empty
  std::string partial;  // bytes after the last newline seen
};

std::vector<UniqueFd> open_log_files(const std::string& log_dir,
                                     const std::vector<std::string>& names) {
  std::vector<UniqueFd> files(names.size());
  if (log_dir.empty()) return files;
  std::error_code error;
  std::filesystem::create_directories(log_dir, error);
  if (error) {
    throw Error("gradwire-run: cannot create log directory " + log_dir + ": " + error.message());
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string path = (std::filesystem::path(log_dir) / names[i]).string();
    files[i].reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!files[i].valid()) {
      throw Error("gradwire-run: cannot open log file " + path + ": " + std::strerror(errno));
    }
  }
  return files;
}

OutputPump::OutputPump(OutputPumpOptions options)
    : options_(options), stdout_target_(options.stdout_fd), stderr_target_(options.stderr_fd) {}

OutputPump::~OutputPump() = default;

void OutputPump::add_source(const std::string& label, UniqueFd stdout_read, UniqueFd stderr_read,
                            UniqueFd log_file) {
  add_stream(label, std::move(stdout_read), /*is_stderr=*/false);
  add_stream(label, std::move(stderr_read), /*is_stderr=*/true);
  if (log_file.valid()) log_files_[label] = std::move(log_file);
}

void OutputPump::add_worker(int rank, UniqueFd stdout_read, UniqueFd stderr_read,
                            UniqueFd log_file) {
  add_source("rank " + std::to_string(rank), std::move(stdout_read), std::move(stderr_read),
             std::move(log_file));
}

void OutputPump::add_stream(const std::string& label, UniqueFd pipe, bool is_stderr) {
  auto stream = std::make_unique<Stream>();
  const int fd = pipe.get();
  stream->pipe = std::move(pipe);
  stream->label = label;
  stream->is_stderr = is_stderr;
  stream->prefix = options_.prefix_output ? "[" + label + "] " : "";
  streams_.emplace(fd, std::move(stream));
}

std::vector<int> OutputPump::fds() const {
  std::vector<int> fds;
  fds.reserve(streams_.size());
  for (const auto& entry : streams_) fds.push_back(entry.first);
  return fds;
}

void OutputPump::on_readable(int fd) {
  auto it = streams_.find(fd);
  if (it == streams_.end()) return;
  Stream& stream = *it->second;
  char buffer[64 * 1024];
  ssize_t got = ::read(fd, buffer, sizeof(buffer));
  if (got > 0) {
    emit(stream, buffer, static_cast<size_t>(got), /*at_eof=*/false);
    return;
  }
  if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
  emit(stream, nullptr, 0, /*at_eof=*/true);  // end of file, or an error treated as one
  streams_.erase(it);
}

void OutputPump::close_all() {
  for (auto& entry : streams_) emit(*entry.second, nullptr, 0, /*at_eof=*/true);
  streams_.clear();
}

void OutputPump::emit(Stream& stream, const char* data, size_t size, bool at_eof) {
  std::string& pending = stream.partial;
  pending.append(data, size);

  // Cut `pending` into terminal lines: complete lines, pieces of kMaxLineBytes of an over-long
  // line, and at end of file the unterminated rest. `done` is where the unwritten rest starts.
  // The terminal gets whole lines only (a piece without a newline gets one, so the next rank's
  // line does not run into it); the log file gets the bytes exactly as written.
  std::string terminal;
  size_t done = 0;
  auto add_line = [&](size_t end) {
    terminal += stream.prefix;
    terminal.append(pending, done, end - done);
    if (pending[end - 1] != '\n') terminal += '\n';
    done = end;
  };
  for (;;) {
    const size_t newline = pending.find('\n', done);
    if (newline != std::string::npos && newline - done < kMaxLineBytes) {
      add_line(newline + 1);
    } else if (pending.size() - done >= kMaxLineBytes) {
      add_line(done + kMaxLineBytes);
    } else {
      break;
    }
  }
  if (at_eof && done < pending.size()) add_line(pending.size());
  if (done == 0) return;

  write_target(stream.is_stderr ? stderr_target_ : stdout_target_, terminal);
  auto log = log_files_.find(stream.label);
  if (log != log_files_.end() && !write_fully(log->second.get(), pending.data(), done)) {
    const std::string warning = "gradwire-run: writing the log file of " + stream.label +
                                " failed (" + std::strerror(errno) + "); logging to it stopped\n";
    write_target(stderr_target_, warning);
    log_files_.erase(log);
  }
  pending.erase(0, done);
}

void OutputPump::write_target(int& target_fd, const std::string& data) {
  if (target_fd < 0 || data.empty()) return;
  if (!write_fully(target_fd, data.data(), data.size())) target_fd = -1;
}

}  // namespace gradwire::launch::detail
