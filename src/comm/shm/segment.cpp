#include "comm/shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>

namespace gradwire::shm {

namespace {

size_t round_up(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

std::runtime_error system_failure(const std::string& what, const std::string& name, int error) {
  return std::runtime_error("shm: " + what + " '" + name + "' failed: " + std::strerror(error));
}

char* map_fd(int fd, size_t bytes, const std::string& name) {
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) throw system_failure("mapping", name, errno);
  return static_cast<char*>(base);
}

}  // namespace

Layout compute_layout(int ranks, size_t slot_bytes) {
  Layout layout;
  layout.ranks = ranks;
  layout.slot_bytes = round_up(std::max<size_t>(slot_bytes, kCacheLine), kCacheLine);
  layout.controls_offset = kPage;
  layout.data_offset =
      round_up(layout.controls_offset + sizeof(RankControl) * static_cast<size_t>(ranks), kPage);
  layout.total_bytes =
      round_up(layout.data_offset + layout.slot_bytes * 2 * static_cast<size_t>(ranks), kPage);
  return layout;
}

std::string segment_prefix(int port) { return "gradwire-" + std::to_string(port) + "-"; }

std::string segment_name(int port, int creator_pid, uint64_t nonce) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(nonce));
  return "/" + segment_prefix(port) + std::to_string(creator_pid) + "-" + hex;
}

Segment::Segment(std::string name, Layout layout, char* base)
    : name_(std::move(name)), layout_(layout), base_(base) {}

Segment::Segment(Segment&& other) noexcept
    : name_(std::move(other.name_)), layout_(other.layout_), base_(other.base_) {
  other.base_ = nullptr;
}

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) munmap(base_, layout_.total_bytes);
    name_ = std::move(other.name_);
    layout_ = other.layout_;
    base_ = other.base_;
    other.base_ = nullptr;
  }
  return *this;
}

Segment::~Segment() {
  if (base_ != nullptr) munmap(base_, layout_.total_bytes);
}

Segment Segment::create(const std::string& name, const Layout& layout) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) throw system_failure("creating shared-memory segment", name, errno);
  // Reserve the pages now: on a full tmpfs (e.g. Docker's 64 MiB /dev/shm) a merely truncated
  // segment would kill the process with SIGBUS at first touch instead of failing here.
  const int error = ftruncate(fd, static_cast<off_t>(layout.total_bytes)) == 0
                        ? posix_fallocate(fd, 0, static_cast<off_t>(layout.total_bytes))
                        : errno;
  if (error != 0) {
    close(fd);
    shm_unlink(name.c_str());
    throw std::runtime_error(
        "shm: sizing segment '" + name + "' to " + std::to_string(layout.total_bytes) +
        " bytes failed: " + std::strerror(error) +
        " (is /dev/shm large enough? Docker: --shm-size; or lower GRADWIRE_SHM_SLOT_BYTES)");
  }
  char* base = nullptr;
  try {
    base = map_fd(fd, layout.total_bytes, name);
  } catch (...) {
    close(fd);
    shm_unlink(name.c_str());
    throw;
  }
  close(fd);
  // Fresh pages are zero: every counter starts at step 0 and pid 0. Construct the atomics.
  for (int r = 0; r < layout.ranks; ++r) {
    new (base + layout.controls_offset + sizeof(RankControl) * r) RankControl{};
  }
  auto* header = new (base) Header{};
  header->version = kSegmentVersion;
  header->ranks = static_cast<uint32_t>(layout.ranks);
  header->slot_bytes = layout.slot_bytes;
  header->total_bytes = layout.total_bytes;
  std::atomic_thread_fence(std::memory_order_release);
  header->magic = kSegmentMagic;
  return Segment(name, layout, base);
}

Segment Segment::attach(const std::string& name, const Layout& layout) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int error = errno;
    throw std::runtime_error(
        "shm: opening segment '" + name + "' created by rank 0 failed: " + std::strerror(error) +
        (error == ENOENT ? " (the shm backend needs every rank on rank 0's host)" : ""));
  }
  struct stat info {};
  if (fstat(fd, &info) != 0 || static_cast<size_t>(info.st_size) != layout.total_bytes) {
    close(fd);
    throw std::runtime_error("shm: segment '" + name + "' has " + std::to_string(info.st_size) +
                             " bytes, expected " + std::to_string(layout.total_bytes) +
                             "; do all ranks use the same gradwire build and options?");
  }
  char* base = map_fd(fd, layout.total_bytes, name);
  close(fd);
  Segment segment(name, layout, base);
  std::atomic_thread_fence(std::memory_order_acquire);
  const auto* header = reinterpret_cast<const Header*>(base);
  if (header->magic != kSegmentMagic || header->version != kSegmentVersion ||
      header->ranks != static_cast<uint32_t>(layout.ranks) ||
      header->slot_bytes != layout.slot_bytes) {
    throw std::runtime_error("shm: segment '" + name +
                             "' does not match this communicator (ranks or slot size differ)");
  }
  return segment;
}

std::atomic<uint64_t>& Segment::claim_word() const {
  return reinterpret_cast<Header*>(base_)->claim;
}

RankControl& Segment::control(int rank) const {
  return *reinterpret_cast<RankControl*>(base_ + layout_.controls_offset +
                                            sizeof(RankControl) * static_cast<size_t>(rank));
}

char* Segment::slot(int rank, int parity) const {
  return base_ + layout_.data_offset +
         (static_cast<size_t>(rank) * 2 + static_cast<size_t>(parity)) * layout_.slot_bytes;
}

void unlink_segment(const std::string& name) { shm_unlink(name.c_str()); }

}  // namespace gradwire::shm
