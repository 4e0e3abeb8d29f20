#include "mapped_file.h"

#include <sys/mman.h>

namespace gradwire::data::detail {

std::shared_ptr<const MappedFile> MappedFile::map(int fd, uint64_t size) {
  if (size == 0 || size > static_cast<uint64_t>(SIZE_MAX)) return nullptr;
  void* address = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) return nullptr;
  return std::shared_ptr<const MappedFile>(
      new MappedFile(static_cast<const char*>(address), static_cast<size_t>(size)));
}

MappedFile::~MappedFile() { ::munmap(const_cast<char*>(data_), size_); }

}  // namespace gradwire::data::detail
