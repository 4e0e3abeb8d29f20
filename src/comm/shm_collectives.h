// The shm backend's algorithms over a segment's slots and step counters (shm_sync.h). Each call
// is one whole collective on raw, contiguous memory; the caller has begun the operation on the
// ShmStepSync (name and deadline).
//
//  allreduce, small (bytes <= small_bytes): one step; every rank copies its input into its slot,
//    then reduces all slots into its output.
//  allreduce, large: chunks of one slot; per chunk every rank copies in all but its own 1/size
//    slice, reduces its own slice (its tensor + the others' slots) into its tensor and its slot
//    (reduce-scatter), then copies the others' reduced slices out of their slots (allgather).
//    Two waits per chunk (posted, reduced); pipelined over the two slot parities: once every
//    rank reduced chunk k, each copies chunk k+1 in and posts it before copying chunk k out, so
//    the next reduction never waits for anyone's copies out. Tensors of at least
//    `streaming_bytes` are written with non-temporal stores (shm_reduce.h).
//  allreduce_shared, a tensor in a shared buffer (shm_shared_buffers.h) at the same place on
//    every rank: no slots, no copies. One step (everyone's input is ready), then every rank
//    reduces its own slice of all ranks' copies and writes the result into every copy, then
//    waits until everyone has (reduced).
//  broadcast / allgather / reduce_scatter / barrier: one step per chunk (barrier: one step).
//
// Thread safety: none; one progress thread per communicator calls these in issue order.
// Throws what ShmStepSync throws (peer gone, timed out, aborted).
#pragma once

#include <c10/core/ScalarType.h>

#include <cstddef>

#include "gradwire/comm/communicator.h"
#include "shm_segment.h"
#include "shm_shared_buffers.h"
#include "shm_sync.h"

namespace gradwire::shm {

// Pure: the half-open element range [begin, end) of `rank`'s slice when `n` elements are split
// over `ranks` ranks in slices that are multiples of `align` elements (the last ones may be
// shorter or empty).
struct Slice {
  size_t begin;
  size_t end;
};
Slice slice_of(size_t n, int ranks, int rank, size_t align);

class ShmCollectives {
 public:
  // Allreduces up to `small_bytes` take the one-step algorithm; larger ones write tensors of at
  // least `streaming_bytes` with streaming stores.
  ShmCollectives(const ShmSegment& segment, ShmStepSync& sync, int rank, size_t small_bytes,
                 size_t streaming_bytes);

  void allreduce(void* data, c10::ScalarType dtype, size_t n, ReduceOp op);
  // `n` elements from `region`'s offset in every rank's copy; the operation was begun with the
  // region's argument (so ranks at different places fail, naming each other).
  void allreduce_shared(const SharedRegion& region, c10::ScalarType dtype, size_t n, ReduceOp op);
  void broadcast(void* data, size_t bytes, int root);
  // outs[r] (bytes each) receives rank r's input.
  void allgather(const void* in, size_t bytes, void* const* outs);
  // in holds size() * n elements; out (n elements) = op over ranks of chunk rank() of in.
  void reduce_scatter(const void* in, void* out, c10::ScalarType dtype, size_t n, ReduceOp op);
  void barrier();

 private:
  void allreduce_small(char* data, c10::ScalarType dtype, size_t n, ReduceOp op);
  void allreduce_large(char* data, c10::ScalarType dtype, size_t n, ReduceOp op);

  const ShmSegment& segment_;
  ShmStepSync& sync_;
  int rank_;
  int size_;
  size_t slot_bytes_;
  size_t small_bytes_;
  size_t streaming_bytes_;
};

}  // namespace gradwire::shm
