// Shared buffers of an shm communicator: memory that every rank of the communicator maps, so that
// an allreduce of a tensor lying in one is reduced in place, without staging copies through the
// segment's slots (Collectives::allreduce_shared; docs/communicator.md, "Shared buffers").
//
// Allocation is collective and runs on the progress thread as an operation of its own
// (OpKind::kSharedAlloc): each rank creates "<segment name>-b<id>-r<rank>" in /dev/shm and maps
// it, posts a step, maps every other rank's, posts a second step, unlinks its own name and posts
// a third. So when any rank returns, nothing is left in /dev/shm; the memory lives while any
// process maps it. A rank whose
// part fails posts kSharedAllocFailed instead, so the others fail at once, naming it.
//
// Thread safety: SharedBufferTable is guarded by a mutex (lookups come from callers' threads,
// registrations from the progress thread). A SharedMapping does not change once built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm/shm/segment.h"
#include "comm/shm/sync.h"

namespace gradwire::shm {

// One shared buffer as this process maps it: every rank's copy. Unmaps them all on destruction.
struct SharedMapping {
  SharedMapping() = default;
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  ~SharedMapping();

  uint64_t id = 0;           // numbered from 1 per communicator, in allocation order
  int rank = 0;              // this process's rank
  size_t bytes = 0;          // asked for, per rank
  size_t mapped_bytes = 0;   // bytes rounded up to whole pages (at least one)
  std::vector<char*> bases;  // bases[r]: rank r's buffer in this process (null: not mapped)

  char* own() const { return bases[rank]; }
};

// Where a tensor lies in a shared buffer: the same byte range of every rank's copy.
struct SharedRegion {
  std::shared_ptr<const SharedMapping> mapping;  // keeps the mappings while an operation runs
  size_t offset = 0;                             // bytes from the start of each copy

  uint64_t argument() const { return shared_argument(mapping->id, offset); }
};

class SharedBufferTable {
 public:
  // Remembers `mapping` (weakly: it lives as long as the tensors made over it).
  void add(const std::shared_ptr<const SharedMapping>& mapping);
  // The region when [data, data + bytes) lies wholly in this rank's copy of a live buffer.
  std::optional<SharedRegion> find(const void* data, size_t bytes) const;

 private:
  mutable std::mutex mutex_;
  // By the address of this rank's copy; expired entries are dropped when met.
  mutable std::map<uintptr_t, std::weak_ptr<const SharedMapping>> by_base_;
};

// Pure: "<segment name>-b<id>-r<rank>".
std::string shared_buffer_name(const std::string& segment_name, uint64_t id, int rank);

// Collective, on the progress thread, inside an operation begun on `sync` with signature
// op_signature(kSharedAlloc, ..., bytes): creates, maps and publishes this rank's buffer and maps
// everyone else's (see above). Throws std::runtime_error naming the file and the system error, or
// what StepSync throws (a rank whose part failed is named as calling a failed allocation).
std::shared_ptr<SharedMapping> allocate_shared_buffer(const Segment& segment, StepSync& sync,
                                                      int rank, uint64_t id, size_t bytes);

}  // namespace gradwire::shm
