// Memory a trainer shares with the parameter servers on its host (docs/ps.md "Shared memory"):
// a tensor in such a region travels as a v1::SharedBytes reference (key, process, descriptor,
// offset) instead of its bytes, so a push or a pull of a dense model costs no serialisation, no
// socket copies and no parsing.
//
// A region is a memfd of the trainer's process, named "gradwire-ps-<key in hex>" with a random
// 64-bit key, sealed against shrinking and growing (a mapping can never fault past its end) and
// mapped shared. A server opens it as /proc/PID/fd/FD once per key and maps it only when the file
// it opened is a sealed memfd of that name; it is unmapped when the server drops it (the trainer's
// descriptor and mapping are independent). Only authenticated calls carry references, and every
// use is bounded by the size the server itself saw. Linux only.
//
// Thread safety: both classes are safe to use from several threads. Blocking: none.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "rpc/proto/ps.pb.h"

namespace gradwire::rpc {

namespace v1 = ::gradwire::ps::v1;

// The trainer's side: regions it creates and the tensors in them.
class SharedRegions {
 public:
  // `server_memory`: a server's own regions (its rows). Their keys are known process-wide, and
  // no SharedRegionCache of this process maps them on a caller's word (is_server_memory).
  explicit SharedRegions(bool server_memory = false);

  // A zero-filled contiguous CPU tensor of `sizes` and `dtype` in a region of its own, freed
  // (closed and unmapped here) with the tensor's storage. BackendError when the system refuses
  // (memfd_create, ftruncate, seals, mmap), naming the call and errno.
  at::Tensor allocate(at::IntArrayRef sizes, at::ScalarType dtype);

  // Where `tensor`'s bytes lie, when it is contiguous and inside a live region of this object.
  std::optional<v1::SharedBytes> find(const at::Tensor& tensor) const;

  // A reference to a small region whose first 8 bytes hold its key (CreateTable's probe).
  v1::SharedBytes probe();

  // Whether `key` is a live region of a server_memory SharedRegions of this process.
  static bool is_server_memory(uint64_t key);

 private:
  struct Registry;
  std::shared_ptr<Registry> registry_;
  const bool server_memory_;
  std::once_flag probe_once_;
  at::Tensor probe_;
};

// One region mapped by a server. Unmapped when the last holder (the cache, a tensor viewing it)
// lets go; `on_unmap` then runs (the cache's accounting).
struct SharedMapping {
  SharedMapping(void* data, int64_t bytes, std::function<void()> on_unmap = nullptr)
      : data(data), bytes(bytes), on_unmap(std::move(on_unmap)) {}
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  ~SharedMapping();
  void* const data;
  const int64_t bytes;
  const std::function<void()> on_unmap;
};

// What a SharedRegionCache may map (ServerOptions::max_shared_*; docs/ps.md "Limits").
struct SharedRegionLimits {
  int max_regions = 1024;                          // regions kept mapped by the cache
  int64_t max_region_bytes = int64_t{1} << 30;     // one region, whole
  int64_t max_mapped_bytes = int64_t{16} << 30;    // all regions mapped at once
  int64_t max_process_bytes = int64_t{4} << 30;    // the regions of one trainer process

  // A trainer's, mapping its servers' rows: no byte caps.
  static SharedRegionLimits unlimited() {
    return {1024, INT64_MAX, INT64_MAX, INT64_MAX};
  }
};

// The server's side: the regions of trainers on its host, mapped once per key. It keeps at most
// `max_regions`; beyond that, regions of processes that ended go first, then the oldest.
class SharedRegionCache {
 public:
  // A server's cache refuses references to a server's own memory (SharedRegions::
  // is_server_memory): no caller can make a server of this process map, read or write the
  // servers' rows. `servers_rows`: a trainer's cache, which maps exactly those (it reads them).
  explicit SharedRegionCache(SharedRegionLimits limits = {}, bool servers_rows = false);

  // A tensor of `sizes` and `dtype` viewing the bytes `ref` names (no copy; the tensor keeps the
  // mapping). InvalidArgument naming `field` when the region cannot be opened, is not a sealed
  // gradwire region with ref's key, belongs to a process that did not pass probe() (a server's
  // cache), or the bytes lie outside it or are misaligned.
  at::Tensor view(const v1::SharedBytes& ref, at::IntArrayRef sizes, at::ScalarType dtype,
                  const std::string& field);

  // Whether `ref` names a region this server can map whose first 8 bytes hold its key; a server's
  // cache then takes references to that process's regions (Note [probed processes]: before, it
  // refuses them).
  bool probe(const v1::SharedBytes& ref);

  int size() const;
  // Bytes of the regions mapped now (by the cache or tensors viewing them), all and one process's.
  int64_t mapped_bytes() const;
  int64_t mapped_bytes_of(int32_t pid) const;

 private:
  std::shared_ptr<SharedMapping> attach(const v1::SharedBytes& ref, const std::string& field,
                                        bool probing);
  static at::Tensor view_of(const std::shared_ptr<SharedMapping>& mapping,
                            const v1::SharedBytes& ref, at::IntArrayRef sizes,
                            at::ScalarType dtype, const std::string& field);
  // Whether process `pid` passed probe() and still runs.
  bool probed(int32_t pid) const;

  struct Entry {
    int32_t pid = 0;
    int32_t fd = 0;
    std::shared_ptr<SharedMapping> mapping;
  };
  // Mapped bytes, all and per process; shared with the mappings, which give theirs back.
  struct Usage {
    std::mutex mutex;
    int64_t total = 0;
    std::map<int32_t, int64_t> per_process;
  };
  // Drops the cache's hold on regions of processes that ended, then on the oldest, until the
  // cache holds at most `keep`. Caller holds mutex_.
  void evict_locked(size_t keep);
  // Counts `bytes` of process `pid` as mapped, or throws InvalidArgument (`where`) when that would
  // pass a limit even after the cache let go of every region it alone holds.
  void reserve(int32_t pid, int64_t bytes, const std::string& where);

  const SharedRegionLimits limits_;
  const bool servers_rows_;
  const std::shared_ptr<Usage> usage_ = std::make_shared<Usage>();
  mutable std::mutex mutex_;
  std::map<uint64_t, Entry> regions_;
  std::map<int32_t, uint64_t> probed_;  // pid -> start time (Note [probed processes])
  std::deque<uint64_t> order_;  // keys, oldest first
};

}  // namespace gradwire::rpc
