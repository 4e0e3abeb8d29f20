// The shm backend's algorithms over a segment's slots and step counters (shm/sync.h). Each call
// is one whole collective on raw, contiguous memory; the caller has begun the operation on the
// StepSync (name and deadline).
//
//  allreduce, small (bytes <= small_bytes): one step; every rank copies its input into its slot,
//    then reduces all slots into its output.
//  allreduce, large: chunks of one slot; per chunk every rank copies in all but its own 1/size
//    slice, reduces its own slice (its tensor + the others' slots) into its tensor and its slot
//    (reduce-scatter), then copies the others' reduced slices out of their slots (allgather).
//    Two waits per chunk (posted, reduced); pipelined over the two slot parities: once every
//    rank reduced chunk k, each copies chunk k+1 in and posts it before copying chunk k out, so
//    the next reduction never waits for anyone's copies out. Tensors of at least
//    `streaming_bytes` are written with non-temporal stores (core/reduce_kernels.h).
//  allreduce_shared, a tensor in a shared buffer (shm/shared_buffers.h) at the same place on
//    every rank: no slots, no copies. One step (everyone's input is ready), then the ranks take
//    pieces of the tensor from a shared counter (claim_piece) until none is left, reducing each
//    piece of all ranks' copies into every copy, then wait until everyone has (reduced). Claimed,
//    not split in fixed slices: a rank whose core is busier (its rank computing, or the core
//    shared with another rank's threads) reduces less, so the ranks stay in step (Note [claimed
//    pieces] in shm/collectives.cpp).
//  broadcast / allgather / reduce_scatter / barrier: one step per chunk (barrier: one step).
//
// Thread safety: none; one progress thread per communicator calls these in issue order.
// Throws what StepSync throws (peer gone, timed out, aborted).
#pragma once

#include <c10/core/ScalarType.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gradwire/comm/communicator.h"
#include "comm/shm/segment.h"
#include "comm/shm/shared_buffers.h"
#include "comm/shm/sync.h"

namespace gradwire::shm {

// Pure: the half-open element range [begin, end) of `rank`'s slice when `n` elements are split
// over `ranks` ranks in slices that are multiples of `align` elements (the last ones may be
// shorter or empty).
struct Slice {
  size_t begin;
  size_t end;
};
Slice slice_of(size_t n, int ranks, int rank, size_t align);

// The next unclaimed piece of the collective of `step`, out of `pieces` (below 2^24), or `pieces`
// when every piece is taken. `word` holds the step's low 40 bits and the count of pieces taken;
// a word left by an earlier step counts as none taken. Lock-free; every rank of the step calls it
// on the same word, and no rank may use the word for a later step before every rank has stopped
// claiming for this one.
uint64_t claim_piece(std::atomic<uint64_t>& word, uint64_t step, uint64_t pieces);
constexpr uint64_t kMaxClaimPieces = uint64_t{1} << 24;

class Collectives {
 public:
  // Allreduces up to `small_bytes` take the one-step algorithm; larger ones write tensors of at
  // least `streaming_bytes` with streaming stores.
  Collectives(const Segment& segment, StepSync& sync, int rank, size_t small_bytes,
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

  const Segment& segment_;
  StepSync& sync_;
  int rank_;
  int size_;
  size_t slot_bytes_;
  size_t small_bytes_;
  size_t streaming_bytes_;
};

}  // namespace gradwire::shm
