#include "gradwire/common/files.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "gradwire/common/error.h"

namespace gradwire {
namespace {

std::string directory_of(const std::string& path) {
  const std::filesystem::path target(path);
  return target.has_parent_path() ? target.parent_path().string() : std::string(".");
}

// A temporary file beside `path`: ".NAME.tmp-XXXXXX" in its directory. Returns the descriptor
// (-1 with errno set on failure) and fills `temp` with its name.
int make_temp_beside(const std::string& path, std::string& temp) {
  temp =
      directory_of(path) + "/." + std::filesystem::path(path).filename().string() + ".tmp-XXXXXX";
  return ::mkostemp(temp.data(), O_CLOEXEC);
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
