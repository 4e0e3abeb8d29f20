// File descriptors and file writes, the one home of each for every layer, tool and example:
// an owned descriptor, errno as text, a full write, the atomic replacement of a file, and the
// check a tool makes before a long run that it will be able to write its output.
// Thread safety: free functions are thread safe; an AtomicFileWriter is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace gradwire {

// An owned file descriptor, closed on destruction. Movable, not copyable.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// "No such file or directory": the text of an errno value.
std::string errno_text(int error_number);

// Writes all `size` bytes to `fd`, resuming after short writes and EINTR and waiting for a
// non-blocking descriptor to become writable. Blocks. Returns false with errno set on failure
// (ENOSPC when the file takes no more bytes).
bool write_fully(int fd, const void* data, size_t size);

// Writes a file so that `path` holds either its old content or all of the new one, whatever
// happens meanwhile (a crash, a full disk): the bytes go to a temporary file beside `path`,
// which is fsynced and renamed over it, then the directory is fsynced. A writer destroyed
// before commit() removes its temporary file; a writer that dies (a crash, SIGKILL) leaves it,
// named ".NAME.tmp-HOST-PID-XXXXXX" for the file NAME it replaces, this host's name and its
// process id (temp_file_writer_here() reads them back). Errors throw gradwire::Error naming
// `what` ("checkpoint", "results"), `path`, the failing step and errno's text. The file gets the
// permissions any new file gets (0666 less the umask: 0644 under umask 022). Blocking file I/O.
class AtomicFileWriter {
 public:
  // Creates the temporary file; the directory of `path` must exist.
  explicit AtomicFileWriter(std::string path, std::string what = "file");
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  // fsync, rename over `path`, fsync of the directory. Call once, after the last write.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& step, int error_number) const;

  std::string path_;
  std::string what_;
  std::string dir_;
  std::string temp_;
  UniqueFd fd_;
  bool committed_ = false;
};

// Who writes an AtomicFileWriter's temporary file.
struct TempFileWriter {
  std::string target;  // the name (no directory) of the file the writer replaces
  int64_t pid = 0;     // the writer's process id on this host
};

// The writer of the temporary file named `file_name` (no directory) when an AtomicFileWriter on
// this host made it; nullopt for any other name, including those of writers on other hosts
// (which may share the directory) and of gradwire versions whose names had no writer in them
// (".NAME.tmp-XXXXXX"). With process_gone(pid) (process.h) it tells a crashed writer's leftover
// from a file a live writer is filling.
std::optional<TempFileWriter> temp_file_writer_here(std::string_view file_name);

// write_file_atomically(path, bytes): an AtomicFileWriter holding `bytes`, committed.
void write_file_atomically(const std::string& path, std::string_view bytes,
                           const std::string& what = "file");

// For a tool about to run for a while before writing `path`: creates the directories above it
// and proves that a file can be created there (a temporary file, removed at once). Throws
// gradwire::Error naming `what` and the path when either fails, so no measurement is lost.
void prepare_output_file(const std::string& path, const std::string& what = "output");

}  // namespace gradwire
