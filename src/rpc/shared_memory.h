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
  SharedRegions();

  // A zero-filled contiguous CPU tensor of `sizes` and `dtype` in a region of its own, freed
  // (closed and unmapped here) with the tensor's storage. BackendError when the system refuses
  // (memfd_create, ftruncate, seals, mmap), naming the call and errno.
  at::Tensor allocate(at::IntArrayRef sizes, at::ScalarType dtype);

  // Where `tensor`'s bytes lie, when it is contiguous and inside a live region of this object.
  std::optional<v1::SharedBytes> find(const at::Tensor& tensor) const;

  // A reference to a small region whose first 8 bytes hold its key (CreateTable's probe).
  v1::SharedBytes probe();

 private:
  struct Registry;
  std::shared_ptr<Registry> registry_;
  std::once_flag probe_once_;
  at::Tensor probe_;
};

// One region mapped by a server. Unmapped when the last holder (the cache, a tensor viewing it)
// lets go.
struct SharedMapping {
  SharedMapping(void* data, int64_t bytes) : data(data), bytes(bytes) {}
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  ~SharedMapping();
  void* const data;
  const int64_t bytes;
};

// The server's side: the regions of trainers on its host, mapped once per key. It keeps at most
// `max_regions`; beyond that, regions of processes that ended go first, then the oldest.
class SharedRegionCache {
 public:
  explicit SharedRegionCache(int max_regions = 1024);

  // A tensor of `sizes` and `dtype` viewing the bytes `ref` names (no copy; the tensor keeps the
  // mapping). InvalidArgument naming `field` when the region cannot be opened, is not a sealed
  // gradwire region with ref's key, or the bytes lie outside it or are misaligned.
  at::Tensor view(const v1::SharedBytes& ref, at::IntArrayRef sizes, at::ScalarType dtype,
                  const std::string& field);

  // Whether `ref` names a region this server can map whose first 8 bytes hold its key.
  bool probe(const v1::SharedBytes& ref);

  int size() const;

 private:
  std::shared_ptr<SharedMapping> attach(const v1::SharedBytes& ref, const std::string& field);

  struct Entry {
    int32_t pid = 0;
    int32_t fd = 0;
    std::shared_ptr<SharedMapping> mapping;
  };
  const int max_regions_;
  mutable std::mutex mutex_;
  std::map<uint64_t, Entry> regions_;
  std::deque<uint64_t> order_;  // keys, oldest first
};

}  // namespace gradwire::rpc
