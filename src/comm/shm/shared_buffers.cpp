#include "comm/shm/shared_buffers.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace gradwire::shm {

namespace {

std::string failure(const std::string& what, const std::string& name, int error) {
  return "shm: " + what + " shared buffer '" + name + "' failed: " + std::strerror(error);
}

// Maps `name` (creating it with `bytes` when `created` is given, which then says whether the
// file was made), populating the page tables now rather than at first touch. Returns the
// address, or null with `error` set.
char* map_buffer(const std::string& name, size_t bytes, bool* created, std::string& error) {
  const bool create = created != nullptr;
  const int flags = create ? O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC : O_RDWR | O_CLOEXEC;
  const int fd = shm_open(name.c_str(), flags, 0600);
  if (fd < 0) {
    error = failure(create ? "creating" : "opening", name, errno);
    return nullptr;
  }
  if (create) *created = true;
  struct stat info {};
  if (create && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    error = failure("sizing", name, errno);
  } else if (!create && (fstat(fd, &info) != 0 || static_cast<size_t>(info.st_size) != bytes)) {
    error = "shm: shared buffer '" + name + "' does not have the expected " +
            std::to_string(bytes) + " bytes";
  }
  void* base = MAP_FAILED;
  if (error.empty()) {
    base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (base == MAP_FAILED) error = failure("mapping", name, errno);
  }
  close(fd);
  return base == MAP_FAILED ? nullptr : static_cast<char*>(base);
}

// Posts the next step, as a failed allocation when `error` is set (then throws it), and waits
// for every rank.
void post_and_wait(StepSync& sync, size_t bytes, const std::string& error) {
  if (!error.empty()) {
    sync.set_signature(op_signature(OpKind::kSharedAllocFailed, 0, 0, 0, bytes));
  }
  const uint64_t step = sync.next_step();
  sync.post(step);
  if (!error.empty()) throw std::runtime_error(error);
  sync.wait_posted(step);
}

}  // namespace

SharedMapping::~SharedMapping() {
  for (char* base : bases) {
    if (base != nullptr) munmap(base, mapped_bytes);
  }
}

void SharedBufferTable::add(const std::shared_ptr<const SharedMapping>& mapping) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = by_base_.begin(); it != by_base_.end();) {
    it = it->second.expired() ? by_base_.erase(it) : std::next(it);
  }
  by_base_[reinterpret_cast<uintptr_t>(mapping->own())] = mapping;
}

std::optional<SharedRegion> SharedBufferTable::find(const void* data, size_t bytes) const {
  const auto address = reinterpret_cast<uintptr_t>(data);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_base_.upper_bound(address);
  if (it == by_base_.begin()) return std::nullopt;
  --it;
  auto mapping = it->second.lock();
  if (!mapping) {  // freed: its address range may belong to anything now
    by_base_.erase(it);
    return std::nullopt;
  }
  const size_t offset = address - it->first;
  if (offset + bytes > mapping->bytes) return std::nullopt;
  return SharedRegion{std::move(mapping), offset};
}

std::string shared_buffer_name(const std::string& segment_name, uint64_t id, int rank) {
  return segment_name + "-b" + std::to_string(id) + "-r" + std::to_string(rank);
}

std::shared_ptr<SharedMapping> allocate_shared_buffer(const Segment& segment, StepSync& sync,
                                                      int rank, uint64_t id, size_t bytes) {
  const int size = segment.layout().ranks;
  auto mapping = std::make_shared<SharedMapping>();
  mapping->id = id;
  mapping->rank = rank;
  mapping->bytes = bytes;
  mapping->mapped_bytes = (std::max<size_t>(bytes, 1) + kPage - 1) / kPage * kPage;
  mapping->bases.assign(size, nullptr);
  const std::string own_name = shared_buffer_name(segment.name(), id, rank);
  struct Unlink {  // the name goes once everyone mapped it, or when this rank gives up
    const std::string& name;
    bool created = false;
    ~Unlink() {
      if (created) shm_unlink(name.c_str());
    }
  } unlink{own_name};

  std::string error;
  mapping->bases[rank] = map_buffer(own_name, mapping->mapped_bytes, &unlink.created, error);
  post_and_wait(sync, bytes, error);  // every rank's file exists

  for (int r = 0; r < size && error.empty(); ++r) {
    if (r == rank) continue;
    mapping->bases[r] = map_buffer(shared_buffer_name(segment.name(), id, r), mapping->mapped_bytes,
                                   nullptr, error);
  }
  post_and_wait(sync, bytes, error);  // every rank mapped every file
  shm_unlink(own_name.c_str());
  unlink.created = false;
  post_and_wait(sync, bytes, std::string());  // every name is gone when any rank returns
  return mapping;
}

}  // namespace gradwire::shm
