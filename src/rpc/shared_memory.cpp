#include "rpc/shared_memory.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <set>

#include "gradwire/common/error.h"

namespace gradwire::rpc {
namespace {

constexpr unsigned kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

std::string region_name(uint64_t key) {
  char name[40];
  std::snprintf(name, sizeof(name), "gradwire-ps-%016llx", static_cast<unsigned long long>(key));
  return name;
}

std::string errno_text(const char* call) {
  return std::string(call) + ": " + std::strerror(errno);
}

uint64_t random_key() {
  std::random_device device;
  uint64_t key = 0;
  while (key == 0) key = (uint64_t{device()} << 32) ^ device();
  return key;
}

// When process `pid` started (/proc/PID/stat's starttime, clock ticks since boot): with the pid,
// names one process for as long as the machine runs. nullopt when it cannot be read (gone).
std::optional<uint64_t> process_start(int32_t pid) {
  std::FILE* file = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (file == nullptr) return std::nullopt;
  char line[1024];
  const size_t got = std::fread(line, 1, sizeof(line) - 1, file);
  std::fclose(file);
  line[got] = '\0';
  // "PID (COMM) STATE ...": COMM may hold anything, so fields are counted after its last ')';
  // starttime is field 22, the 20th after it.
  const char* field = std::strrchr(line, ')');
  for (int i = 0; field != nullptr && i < 20; ++i) field = std::strchr(field + 1, ' ');
  if (field == nullptr) return std::nullopt;
  return std::strtoull(field + 1, nullptr, 10);
}

// What the symbolic link `path` names, or "" when it cannot be read.
std::string link_target(const std::string& path) {
  char target[256] = {};
  const ssize_t length = ::readlink(path.c_str(), target, sizeof(target) - 1);
  return length > 0 ? std::string(target, static_cast<size_t>(length)) : std::string();
}

// Closes a descriptor when it goes out of scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

// The keys of the live regions of every server_memory SharedRegions of this process.
struct ServerKeys {
  std::mutex mutex;
  std::set<uint64_t> keys;
};
ServerKeys& server_keys() {
  static ServerKeys* keys = new ServerKeys();  // never destroyed: regions may outlive statics
  return *keys;
}

}  // namespace

// A live region of SharedRegions: its key, descriptor and mapping.
struct Region {
  uint64_t key = 0;
  int fd = -1;
  void* data = nullptr;
  int64_t bytes = 0;
};

struct SharedRegions::Registry {
  mutable std::mutex mutex;
  std::map<uintptr_t, Region> by_address;  // by the mapping's start
};

SharedRegions::SharedRegions(bool server_memory)
    : registry_(std::make_shared<Registry>()), server_memory_(server_memory) {}

at::Tensor SharedRegions::allocate(at::IntArrayRef sizes, at::ScalarType dtype) {
  int64_t numel = 1;
  for (const int64_t size : sizes) {
    if (size < 0) throw InvalidArgument("gradwire: shared tensor of negative size " + c10::str(sizes));
    numel *= size;
  }
  const int64_t bytes = std::max<int64_t>(1, numel * static_cast<int64_t>(c10::elementSize(dtype)));
  Region region;
  region.key = random_key();
  region.bytes = bytes;
  const std::string name = region_name(region.key);
  region.fd = ::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (region.fd < 0) throw BackendError("gradwire: shared memory: " + errno_text("memfd_create"));
  FdCloser guard{region.fd};
  if (::ftruncate(region.fd, bytes) != 0) {
    throw BackendError("gradwire: shared memory of " + std::to_string(bytes) +
                       " bytes: " + errno_text("ftruncate"));
  }
  if (::fcntl(region.fd, F_ADD_SEALS, kSeals) != 0) {
    throw BackendError("gradwire: shared memory: " + errno_text("fcntl(F_ADD_SEALS)"));
  }
  region.data = ::mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, MAP_SHARED,
                       region.fd, 0);
  if (region.data == MAP_FAILED) {
    throw BackendError("gradwire: shared memory of " + std::to_string(bytes) +
                       " bytes: " + errno_text("mmap"));
  }
  guard.fd = -1;  // the registry owns it now
  {
    const std::lock_guard<std::mutex> lock(registry_->mutex);
    registry_->by_address[reinterpret_cast<uintptr_t>(region.data)] = region;
  }
  if (server_memory_) {
    const std::lock_guard<std::mutex> lock(server_keys().mutex);
    server_keys().keys.insert(region.key);
  }
  std::weak_ptr<Registry> registry = registry_;
  const Region owned = region;
  const bool server_memory = server_memory_;
  return at::from_blob(
      region.data, sizes,
      [registry, owned, server_memory](void*) {
        if (server_memory) {
          const std::lock_guard<std::mutex> lock(server_keys().mutex);
          server_keys().keys.erase(owned.key);
        }
        if (const auto live = registry.lock()) {
          const std::lock_guard<std::mutex> lock(live->mutex);
          live->by_address.erase(reinterpret_cast<uintptr_t>(owned.data));
        }
        ::munmap(owned.data, static_cast<size_t>(owned.bytes));
        ::close(owned.fd);
      },
      at::TensorOptions().dtype(dtype));
}

std::optional<v1::SharedBytes> SharedRegions::find(const at::Tensor& tensor) const {
  if (!tensor.defined() || !tensor.device().is_cpu() || !tensor.is_contiguous()) return std::nullopt;
  const auto start = reinterpret_cast<uintptr_t>(tensor.data_ptr());
  const auto bytes = static_cast<uintptr_t>(tensor.numel()) * tensor.element_size();
  const std::lock_guard<std::mutex> lock(registry_->mutex);
  auto found = registry_->by_address.upper_bound(start);
  if (found == registry_->by_address.begin()) return std::nullopt;
  --found;
  const Region& region = found->second;
  if (start + bytes > found->first + static_cast<uintptr_t>(region.bytes)) return std::nullopt;
  v1::SharedBytes ref;
  ref.set_key(region.key);
  ref.set_pid(static_cast<int32_t>(::getpid()));
  ref.set_fd(region.fd);
  ref.set_offset(static_cast<int64_t>(start - found->first));
  return ref;
}

v1::SharedBytes SharedRegions::probe() {
  std::call_once(probe_once_, [this] {
    probe_ = allocate({1}, at::kLong);
    const std::optional<v1::SharedBytes> ref = find(probe_);
    GRADWIRE_CHECK(ref.has_value());
    probe_.data_ptr<int64_t>()[0] = static_cast<int64_t>(ref->key());
  });
  return *find(probe_);
}


bool SharedRegions::is_server_memory(uint64_t key) {
  ServerKeys& known = server_keys();
  const std::lock_guard<std::mutex> lock(known.mutex);
  return known.keys.count(key) != 0;
}

SharedMapping::~SharedMapping() {
  ::munmap(data, static_cast<size_t>(bytes));
  if (on_unmap) on_unmap();
}

SharedRegionCache::SharedRegionCache(SharedRegionLimits limits, bool servers_rows)
    : limits_(limits), servers_rows_(servers_rows) {}

void SharedRegionCache::evict_locked(size_t keep) {
  // Regions of processes that ended first, then the oldest.
  for (auto key = order_.begin(); key != order_.end() && regions_.size() > keep;) {
    const auto entry = regions_.find(*key);
    if (entry != regions_.end() && ::kill(entry->second.pid, 0) != 0 && errno == ESRCH) {
      regions_.erase(entry);
      key = order_.erase(key);
    } else {
      ++key;
    }
  }
  while (regions_.size() > keep && !order_.empty()) {
    regions_.erase(order_.front());
    order_.pop_front();
  }
}

void SharedRegionCache::reserve(int32_t pid, int64_t bytes, const std::string& where) {
  const auto fits = [&] {
    const std::lock_guard<std::mutex> lock(usage_->mutex);
    const int64_t mine = usage_->per_process[pid];
    if (usage_->total + bytes > limits_.max_mapped_bytes || mine + bytes > limits_.max_process_bytes) {
      return false;
    }
    usage_->total += bytes;
    usage_->per_process[pid] = mine + bytes;
    return true;
  };
  if (fits()) return;
  {
    // What only the cache holds is unmapped when it lets go; tensors in use keep theirs.
    const std::lock_guard<std::mutex> lock(mutex_);
    evict_locked(0);
  }
  if (fits()) return;
  const std::lock_guard<std::mutex> lock(usage_->mutex);
  throw InvalidArgument(
      where + ": mapping its " + std::to_string(bytes) + " bytes would pass this server's limit " +
      "on shared memory: " + std::to_string(usage_->total) + " bytes mapped of max_shared_bytes " +
      std::to_string(limits_.max_mapped_bytes) + ", " + std::to_string(usage_->per_process[pid]) +
      " of them from process " + std::to_string(pid) + " of max_shared_process_bytes " +
      std::to_string(limits_.max_process_bytes) +
      " (--max-shared-bytes, --max-shared-process-bytes); nothing was mapped");
}

bool SharedRegionCache::probed(int32_t pid) const {
  const std::optional<uint64_t> start = process_start(pid);
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto found = probed_.find(pid);
  return start && found != probed_.end() && found->second == *start;
}

std::shared_ptr<SharedMapping> SharedRegionCache::attach(const v1::SharedBytes& ref,
                                                         const std::string& field, bool probing) {
  const std::string where = "gradwire: shared bytes '" + field + "' (process " +
                            std::to_string(ref.pid()) + ", descriptor " + std::to_string(ref.fd()) +
                            ", region " + region_name(ref.key()) + ")";
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto found = regions_.find(ref.key());
    if (found != regions_.end()) {
      if (found->second.pid != ref.pid() || found->second.fd != ref.fd()) {
        throw InvalidArgument(where + ": this key belongs to process " +
                              std::to_string(found->second.pid) + ", descriptor " +
                              std::to_string(found->second.fd));
      }
      return found->second.mapping;
    }
  }
  if (ref.key() == 0 || ref.pid() <= 0 || ref.fd() < 0) {
    throw InvalidArgument(where + ": not a region reference");
  }
  // A server's own memory (its rows, which it names in answers) is never mapped on a caller's
  // word, under whichever process's descriptor: the name checked below carries the key.
  if (!servers_rows_ && SharedRegions::is_server_memory(ref.key())) {
    throw InvalidArgument(where + ": names a parameter server's own memory; only a trainer's "
                          "own regions are taken");
  }
  // Note [probed processes]: only regions of a process that passed this server's probe.
  if (!servers_rows_ && !probing && !probed(ref.pid())) {
    throw InvalidArgument(where + ": process " + std::to_string(ref.pid()) +
                          " did not pass this server's shared-memory probe (a trainer's "
                          "CreateTable from this host); its references are not taken");
  }
  const std::string path =
      "/proc/" + std::to_string(ref.pid()) + "/fd/" + std::to_string(ref.fd());
  const std::string expected = "/memfd:" + region_name(ref.key()) + " (deleted)";
  // Named as the region before anything is opened. The trainer may replace its descriptor at any
  // moment, so the file is first pinned with O_PATH (which opens nothing: no device, pipe or
  // FIFO sees an open), checked there (a regular file, named as the region), and only that pinned
  // file is then opened for reading and writing, through this process's own descriptor of it.
  if (link_target(path) != expected) {
    throw InvalidArgument(where + ": " + path + " is not that region (or cannot be read: is " +
                          "the trainer on this host and alive?)");
  }
  const int pinned = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  if (pinned < 0) {
    throw InvalidArgument(where + ": cannot open " + path + " (" + std::strerror(errno) +
                          "); is the trainer on this host and alive?");
  }
  FdCloser pin{pinned};
  const std::string pinned_path = "/proc/self/fd/" + std::to_string(pinned);
  struct stat kind {};
  if (link_target(pinned_path) != expected || ::fstat(pinned, &kind) != 0 ||
      !S_ISREG(kind.st_mode)) {
    throw InvalidArgument(where + ": " + path + " is not that region");
  }
  const int fd = ::open(pinned_path.c_str(), O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    throw InvalidArgument(where + ": cannot open " + path + " (" + std::strerror(errno) + ")");
  }
  FdCloser guard{fd};
  // The file opened must be the region named: a memfd "gradwire-ps-<key>", sealed.
  if (link_target("/proc/self/fd/" + std::to_string(fd)) != expected) {
    throw InvalidArgument(where + ": " + path + " is not that region");
  }
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (static_cast<unsigned>(seals) & (F_SEAL_SHRINK | F_SEAL_GROW)) !=
                       (F_SEAL_SHRINK | F_SEAL_GROW)) {
    throw InvalidArgument(where + ": the region is not sealed against resizing");
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || info.st_size <= 0) {
    throw InvalidArgument(where + ": cannot read the region's size");
  }
  const auto bytes = static_cast<int64_t>(info.st_size);
  if (bytes > limits_.max_region_bytes) {
    throw InvalidArgument(where + ": a region of " + std::to_string(bytes) +
                          " bytes, above this server's max_shared_region_bytes " +
                          std::to_string(limits_.max_region_bytes) +
                          " (--max-shared-region-bytes); nothing was mapped");
  }
  reserve(ref.pid(), bytes, where);
  void* data =
      ::mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int32_t pid = ref.pid();
  std::weak_ptr<Usage> usage = usage_;
  auto give_back = [usage, pid, bytes] {
    if (const auto live = usage.lock()) {
      const std::lock_guard<std::mutex> lock(live->mutex);
      live->total -= bytes;
      if ((live->per_process[pid] -= bytes) <= 0) live->per_process.erase(pid);
    }
  };
  if (data == MAP_FAILED) {
    const std::string error = errno_text("mmap");
    give_back();
    throw InvalidArgument(where + ": " + error);
  }
  auto mapping = std::make_shared<SharedMapping>(data, bytes, give_back);
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto [it, inserted] = regions_.emplace(ref.key(), Entry{ref.pid(), ref.fd(), mapping});
  if (!inserted) return it->second.mapping;  // another call mapped it meanwhile
  order_.push_back(ref.key());
  evict_locked(static_cast<size_t>(std::max(1, limits_.max_regions)));
  return mapping;
}

at::Tensor SharedRegionCache::view(const v1::SharedBytes& ref, at::IntArrayRef sizes,
                                   at::ScalarType dtype, const std::string& field) {
  return view_of(attach(ref, field, /*probing=*/false), ref, sizes, dtype, field);
}

at::Tensor SharedRegionCache::view_of(const std::shared_ptr<SharedMapping>& mapping,
                                      const v1::SharedBytes& ref, at::IntArrayRef sizes,
                                      at::ScalarType dtype, const std::string& field) {
  int64_t numel = 1;
  for (const int64_t size : sizes) numel *= size;  // the caller bounded the shape
  const auto element = static_cast<int64_t>(c10::elementSize(dtype));
  const int64_t bytes = numel * element;
  const int64_t offset = ref.offset();
  if (offset < 0 || offset % element != 0 || offset > mapping->bytes ||
      bytes > mapping->bytes - offset) {
    throw InvalidArgument("gradwire: shared bytes '" + field + "': " + std::to_string(bytes) +
                          " bytes at offset " + std::to_string(offset) + " of a region of " +
                          std::to_string(mapping->bytes) + " bytes (out of bounds or not aligned to " +
                          std::to_string(element) + ")");
  }
  return at::from_blob(static_cast<char*>(mapping->data) + offset, sizes,
                       [mapping](void*) {}, at::TensorOptions().dtype(dtype));
}

// Note [probed processes]: a shared reference makes the server read and write memory of the
// process it names. A region whose name and key check out can only come from its owner (the key
// is random and travels only between the owner and this server), but any token holder could
// otherwise send references without ever showing it can share memory with the server at all. So
// the cache takes references only from processes that passed the probe: CreateTable's reference
// to a region of the trainer's whose first 8 bytes hold its key, which only a process on this
// host, allowed to open the trainer's descriptors, can make the server read. The process is
// remembered by pid and start time (a pid reused by a later process does not inherit it); at most
// max_regions processes, those that ended making room first; beyond that a probe fails, and that
// trainer's calls go over gRPC.
bool SharedRegionCache::probe(const v1::SharedBytes& ref) {
  try {
    const at::Tensor key = view_of(attach(ref, "probe", /*probing=*/true), ref, {1}, at::kLong,
                                   "probe");
    if (static_cast<uint64_t>(key.data_ptr<int64_t>()[0]) != ref.key()) return false;
  } catch (const InvalidArgument&) {
    return false;
  }
  if (servers_rows_) return true;
  const std::optional<uint64_t> start = process_start(ref.pid());
  if (!start) return false;
  const std::lock_guard<std::mutex> lock(mutex_);
  // The probe's region has served: not kept mapped, nor counted against the caps.
  if (regions_.erase(ref.key()) != 0) {
    order_.erase(std::find(order_.begin(), order_.end(), ref.key()));
  }
  if (probed_.count(ref.pid()) == 0 &&
      probed_.size() >= static_cast<size_t>(std::max(1, limits_.max_regions))) {
    for (auto entry = probed_.begin(); entry != probed_.end();) {
      entry = process_start(entry->first) == entry->second ? std::next(entry)
                                                           : probed_.erase(entry);
    }
    if (probed_.size() >= static_cast<size_t>(std::max(1, limits_.max_regions))) return false;
  }
  probed_[ref.pid()] = *start;
  return true;
}

int SharedRegionCache::size() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(regions_.size());
}

int64_t SharedRegionCache::mapped_bytes() const {
  const std::lock_guard<std::mutex> lock(usage_->mutex);
  return usage_->total;
}

int64_t SharedRegionCache::mapped_bytes_of(int32_t pid) const {
  const std::lock_guard<std::mutex> lock(usage_->mutex);
  const auto found = usage_->per_process.find(pid);
  return found == usage_->per_process.end() ? 0 : found->second;
}

}  // namespace gradwire::rpc
