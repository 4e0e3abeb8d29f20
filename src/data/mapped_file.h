// MappedFile: a read-only memory map of a whole file, through which RecordFileReader verifies and
// hands out uncompressed chunks in place (no copy out of the page cache; docs/data.md,
// "Performance").
//
// Ownership: shared. Chunks that view the mapping hold a shared_ptr to it, so they stay valid
// after their reader is gone; the last holder unmaps. Thread safety: bytes() is immutable and may
// be read from any thread. Caveat (documented for users in RecordReaderOptions::map_file): if the
// file is truncated while mapped, touching the lost pages raises SIGBUS.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

namespace gradwire::data::detail {

class MappedFile {
 public:
  // Maps the first `size` bytes of the open file `fd` (the caller keeps owning fd; the mapping
  // does not need it afterwards). nullptr when the file cannot be mapped (size 0, a file system
  // without mmap support, address space exhausted): the caller then reads with pread.
  static std::shared_ptr<const MappedFile> map(int fd, uint64_t size);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const { return {data_, size_}; }

 private:
  MappedFile(const char* data, size_t size) : data_(data), size_(size) {}
  const char* data_;
  size_t size_;
};

}  // namespace gradwire::data::detail
