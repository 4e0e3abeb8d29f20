#include "gradwire/common/files.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <system_error>

#include "gradwire/common/error.h"

namespace gradwire {
namespace {

std::string directory_of(const std::string& path) {
  const std::filesystem::path target(path);
  return target.has_parent_path() ? target.parent_path().string() : std::string(".");
}

constexpr std::string_view kTempMarker = ".tmp-";
constexpr size_t kRandomChars = 6;  // the XXXXXX of a temporary file's name

// This host's name as temporary file names carry it: at most 64 characters of [A-Za-z0-9._-]
// (others become '_'), "localhost" when the name cannot be read.
std::string host_for_file_names() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  std::string host(name, ::strnlen(name, 64));
  for (char& c : host) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '_' || c == '-';
    if (!plain) c = '_';
  }
  return host;
}

// A temporary file beside `path`: ".NAME.tmp-HOST-PID-XXXXXX" in its directory, XXXXXX random
// characters of [A-Za-z0-9]. Returns the descriptor (-1 with errno set on failure) and fills
// `temp` with its name. Created with mode 0666 less the umask, as open(2) creates any file (so the
// file renamed over `path` has the permissions a user expects, 0644 under umask 022; mkstemp would
// give 0600).
int make_temp_beside(const std::string& path, std::string& temp) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 random(std::random_device{}() ^
                                      static_cast<uint64_t>(::getpid()) << 32);
  const std::string prefix = directory_of(path) + "/." +
                             std::filesystem::path(path).filename().string() +
                             std::string(kTempMarker) + host_for_file_names() + "-" +
                             std::to_string(::getpid()) + "-";
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp = prefix;
    for (size_t i = 0; i < kRandomChars; ++i) temp += kAlphabet[random() % kAlphabet.size()];
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

}  // namespace

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string errno_text(int error_number) {
  return std::error_code(error_number, std::generic_category()).message();
}

bool write_fully(int fd, const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd, bytes, size);
    if (written > 0) {
      bytes += written;
      size -= static_cast<size_t>(written);
      continue;
    }
    if (written == 0) {
      errno = ENOSPC;
      return false;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd writable{fd, POLLOUT, 0};
      ::poll(&writable, 1, -1);
      continue;
    }
    return false;
  }
  return true;
}

AtomicFileWriter::AtomicFileWriter(std::string path, std::string what)
    : path_(std::move(path)), what_(std::move(what)), dir_(directory_of(path_)) {
  fd_.reset(make_temp_beside(path_, temp_));
  if (!fd_.valid()) fail("creating a temporary file in '" + dir_ + "'", errno);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFileWriter::fail(const std::string& step, int error_number) const {
  throw Error("gradwire: cannot write " + what_ + " '" + path_ + "': " + step + ": " +
              errno_text(error_number) +
              ". Check that the directory exists, is writable and has space.");
}

void AtomicFileWriter::write(const void* data, size_t size) {
  GRADWIRE_CHECK(!committed_);
  if (!write_fully(fd_.get(), data, size)) fail("writing " + temp_, errno);
}

void AtomicFileWriter::commit() {
  GRADWIRE_CHECK(!committed_);
  if (::fsync(fd_.get()) != 0) fail("fsync of " + temp_, errno);
  if (::close(fd_.release()) != 0) fail("closing " + temp_, errno);
  if (::rename(temp_.c_str(), path_.c_str()) != 0) fail("renaming " + temp_ + " to it", errno);
  committed_ = true;
  UniqueFd dir(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid() || ::fsync(dir.get()) != 0) {
    fail("fsync of the directory '" + dir_ + "' after the rename", errno);
  }
}

std::optional<TempFileWriter> temp_file_writer_here(std::string_view name) {
  // "." NAME ".tmp-" HOST "-" PID "-" XXXXXX, read from the end: HOST may hold '-' and NAME
  // '.tmp-'.
  const std::string host_part = std::string(kTempMarker) + host_for_file_names() + "-";
  if (name.size() < 1 + host_part.size() + 3 + kRandomChars || name.front() != '.') {
    return std::nullopt;
  }
  const size_t random_at = name.size() - kRandomChars;
  if (name[random_at - 1] != '-') return std::nullopt;
  size_t pid_at = random_at - 1;
  while (pid_at > 0 && name[pid_at - 1] >= '0' && name[pid_at - 1] <= '9') --pid_at;
  const std::string_view pid = name.substr(pid_at, random_at - 1 - pid_at);
  if (pid.empty() || pid.size() > 18 || pid_at < 1 + host_part.size() + 1) return std::nullopt;
  const size_t host_at = pid_at - host_part.size();
  if (name.substr(host_at, host_part.size()) != host_part) return std::nullopt;
  TempFileWriter writer;
  writer.target = std::string(name.substr(1, host_at - 1));
  writer.pid = std::stoll(std::string(pid));
  return writer;
}

void write_file_atomically(const std::string& path, std::string_view bytes,
                           const std::string& what) {
  AtomicFileWriter writer(path, what);
  writer.write(bytes);
  writer.commit();
}

void prepare_output_file(const std::string& path, const std::string& what) {
  const std::string dir = directory_of(path);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    throw Error("gradwire: cannot create the directory '" + dir + "' for the " + what + " '" +
                path + "': " + error.message());
  }
  std::string temp;
  UniqueFd probe(make_temp_beside(path, temp));
  if (!probe.valid()) {
    throw Error("gradwire: cannot write the " + what + " '" + path + "': " + errno_text(errno) +
                " (checked before starting, so nothing was measured in vain)");
  }
  ::unlink(temp.c_str());
}

}  // namespace gradwire
