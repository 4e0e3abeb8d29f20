#include "comm/shm/collectives.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "comm/core/reduce_kernels.h"

namespace gradwire::shm {

Slice slice_of(size_t n, int ranks, int rank, size_t align) {
  size_t per_rank = (n + ranks - 1) / ranks;
  per_rank = (per_rank + align - 1) / align * align;
  const size_t begin = std::min(n, per_rank * static_cast<size_t>(rank));
  return Slice{begin, std::min(n, begin + per_rank)};
}

Collectives::Collectives(const Segment& segment, StepSync& sync, int rank,
                               size_t small_bytes, size_t streaming_bytes)
    : segment_(segment),
      sync_(sync),
      rank_(rank),
      size_(segment.layout().ranks),
      slot_bytes_(segment.layout().slot_bytes),
      small_bytes_(std::min(small_bytes, segment.layout().slot_bytes)),
      streaming_bytes_(streaming_bytes) {}

void Collectives::allreduce(void* data, c10::ScalarType dtype, size_t n, ReduceOp op) {
  if (n == 0 || size_ == 1) return;  // a world of one: every op leaves the input as it is
  const size_t bytes = n * c10::elementSize(dtype);
  if (bytes <= small_bytes_) {
    allreduce_small(static_cast<char*>(data), dtype, n, op);
  } else {
    allreduce_large(static_cast<char*>(data), dtype, n, op);
  }
}

void Collectives::allreduce_small(char* data, c10::ScalarType dtype, size_t n, ReduceOp op) {
  const uint64_t step = sync_.next_step();
  const int parity = StepSync::parity(step);
  std::memcpy(segment_.slot(rank_, parity), data, n * c10::elementSize(dtype));
  sync_.post(step);
  sync_.wait_posted(step);
  std::vector<const void*> inputs(size_);
  for (int r = 0; r < size_; ++r) inputs[r] = segment_.slot(r, parity);
  reduce(dtype, op, data, inputs.data(), size_, n);
}

void Collectives::allreduce_large(char* data, c10::ScalarType dtype, size_t n, ReduceOp op) {
  const size_t item = c10::elementSize(dtype);
  const size_t chunk_elements = slot_bytes_ / item;
  const size_t chunks = (n + chunk_elements - 1) / chunk_elements;
  // Slices are whole cache lines, so no two ranks write the same line.
  const size_t align = std::max<size_t>(1, kCacheLine / item);
  const Stores tensor_stores = n * item >= streaming_bytes_ ? Stores::kStreaming : Stores::kCached;
  auto count_of = [&](size_t chunk) {
    return std::min(chunk_elements, n - chunk * chunk_elements);
  };
  // Others need every slice of a chunk but this rank's own: that one is reduced straight from
  // the caller's tensor.
  auto copy_in = [&](size_t chunk, uint64_t step) {
    const size_t count = count_of(chunk);
    const char* source = data + chunk * chunk_elements * item;
    char* slot = segment_.slot(rank_, StepSync::parity(step));
    const Slice mine = slice_of(count, size_, rank_, align);
    std::memcpy(slot, source, mine.begin * item);
    std::memcpy(slot + mine.end * item, source + mine.end * item, (count - mine.end) * item);
    sync_.post(step);
  };
  std::vector<const void*> inputs(size_);
  uint64_t step = sync_.next_step();
  copy_in(0, step);
  for (size_t chunk = 0; chunk < chunks; ++chunk) {
    const size_t count = count_of(chunk);
    char* target = data + chunk * chunk_elements * item;
    const int parity = StepSync::parity(step);
    char* slot = segment_.slot(rank_, parity);
    const Slice mine = slice_of(count, size_, rank_, align);
    sync_.wait_posted(step);
    // Reduce-scatter: this rank's slice of every slot, into the tensor and its own slot.
    if (mine.end > mine.begin) {
      for (int r = 0; r < size_; ++r) {
        inputs[r] = (r == rank_ ? target : segment_.slot(r, parity)) + mine.begin * item;
      }
      reduce(dtype, op, target + mine.begin * item, inputs.data(), size_, mine.end - mine.begin,
             slot + mine.begin * item, tensor_stores);
    }
    sync_.post_reduced(step);
    sync_.wait_reduced(step);
    // Every rank has now finished the previous chunk (its `reduced` step follows its copies
    // out of that chunk), so the other slot parity is free: publish the next chunk before
    // copying this one out, so that nobody waits for this rank's copies.
    uint64_t next = 0;
    if (chunk + 1 < chunks) {
      next = sync_.next_step();
      copy_in(chunk + 1, next);
    }
    // Allgather: every other rank's reduced slice, out of its slot.
    for (int r = 0; r < size_; ++r) {
      const Slice theirs = slice_of(count, size_, r, align);
      if (r == rank_ || theirs.end == theirs.begin) continue;
      copy_bytes(target + theirs.begin * item, segment_.slot(r, parity) + theirs.begin * item,
                 (theirs.end - theirs.begin) * item, tensor_stores);
    }
    step = next;
  }
}

uint64_t claim_piece(std::atomic<uint64_t>& word, uint64_t step, uint64_t pieces) {
  constexpr int kCountBits = 24;
  constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;
  const uint64_t tag = (step & ((uint64_t{1} << (64 - kCountBits)) - 1)) << kCountBits;
  uint64_t seen = word.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t taken = (seen & ~kCountMask) == tag ? seen & kCountMask : 0;
    if (taken >= pieces) return pieces;
    if (word.compare_exchange_weak(seen, tag | (taken + 1), std::memory_order_relaxed)) {
      return taken;
    }
  }
}

// Note [claimed pieces]: with fixed slices an allreduce in place takes as long as its slowest
// rank's slice. In DDP the ranks' progress threads share the cores with the ranks' backward
// passes, and when the scheduler gives one rank's threads less time, that rank also had to reduce
// half of every bucket; it fell behind by milliseconds per iteration, and the others waited for
// it at the last bucket. Pieces taken from one counter let whoever has a core free do the work.
// The counter needs no reset: a word from an earlier step reads as nothing taken, and no rank
// begins the next collective on this segment before every rank has posted `reduced`, which it
// does only once it found nothing left to claim. Pieces are whole cache lines (so no two ranks
// write the same line of a copy) and large enough that claiming costs nothing next to reducing.
namespace {
// Elements reduced at a time in place: 64 KiB, so that the result is still in cache when it is
// copied to the third and later ranks (two ranks: the reduction writes both copies itself).
size_t sub_piece_of(size_t item) { return std::max<size_t>(1, (size_t{64} << 10) / item); }
}  // namespace

// Note [claimed pieces] (above).
void Collectives::allreduce_shared(const SharedRegion& region, c10::ScalarType dtype, size_t n,
                                      ReduceOp op) {
  if (size_ == 1) return;  // as allreduce
  const size_t item = c10::elementSize(dtype);
  const uint64_t step = sync_.next_step();
  sync_.post(step);
  sync_.wait_posted(step);  // every rank's input is in its copy
  std::vector<char*> copies(size_);
  for (int r = 0; r < size_; ++r) copies[r] = region.mapping->bases[r] + region.offset;
  std::vector<const void*> inputs(size_);
  const size_t sub_piece = sub_piece_of(item);
  const int other = rank_ == 0 ? 1 : 0;
  // Pieces of 256 KiB (more when there would be 2^24 of them), reduced a sub-piece at a time
  // into this rank's copy and the next rank's, then copied to the others.
  const size_t piece = std::max(sub_piece * 4, (n + kMaxClaimPieces - 1) / kMaxClaimPieces);
  const uint64_t pieces = (n + piece - 1) / piece;
  for (uint64_t p = claim_piece(segment_.claim_word(), step, pieces); p < pieces;
       p = claim_piece(segment_.claim_word(), step, pieces)) {
    const size_t end = std::min(n, (p + 1) * piece);
    for (size_t at = p * piece; at < end; at += sub_piece) {
      const size_t count = std::min(sub_piece, end - at);
      for (int r = 0; r < size_; ++r) inputs[r] = copies[r] + at * item;
      char* out = copies[rank_] + at * item;
      reduce(dtype, op, out, inputs.data(), size_, count,
             size_ > 1 ? copies[other] + at * item : nullptr);
      for (int r = 0; r < size_; ++r) {
        if (r != rank_ && r != other) std::memcpy(copies[r] + at * item, out, count * item);
      }
    }
  }
  sync_.post_reduced(step);
  sync_.wait_reduced(step);  // every copy holds the result
}

void Collectives::broadcast(void* data, size_t bytes, int root) {
  char* bytes_ptr = static_cast<char*>(data);
  for (size_t offset = 0; offset < bytes; offset += slot_bytes_) {
    const size_t count = std::min(slot_bytes_, bytes - offset);
    const uint64_t step = sync_.next_step();
    const int parity = StepSync::parity(step);
    if (rank_ == root) std::memcpy(segment_.slot(root, parity), bytes_ptr + offset, count);
    sync_.post(step);
    sync_.wait_posted(step);
    if (rank_ != root) std::memcpy(bytes_ptr + offset, segment_.slot(root, parity), count);
  }
}

void Collectives::allgather(const void* in, size_t bytes, void* const* outs) {
  const char* source = static_cast<const char*>(in);
  for (size_t offset = 0; offset < bytes; offset += slot_bytes_) {
    const size_t count = std::min(slot_bytes_, bytes - offset);
    const uint64_t step = sync_.next_step();
    const int parity = StepSync::parity(step);
    std::memcpy(segment_.slot(rank_, parity), source + offset, count);
    sync_.post(step);
    sync_.wait_posted(step);
    for (int r = 0; r < size_; ++r) {
      std::memcpy(static_cast<char*>(outs[r]) + offset, segment_.slot(r, parity), count);
    }
  }
}

void Collectives::reduce_scatter(const void* in, void* out, c10::ScalarType dtype, size_t n,
                                    ReduceOp op) {
  const size_t item = c10::elementSize(dtype);
  // Each step moves `per_part` elements of every rank's part; parts sit side by side in a slot.
  const size_t per_part = std::max<size_t>(1, slot_bytes_ / (item * size_));
  const char* source = static_cast<const char*>(in);
  char* target = static_cast<char*>(out);
  std::vector<const void*> inputs(size_);
  for (size_t offset = 0; offset < n; offset += per_part) {
    const size_t count = std::min(per_part, n - offset);
    const uint64_t step = sync_.next_step();
    const int parity = StepSync::parity(step);
    char* slot = segment_.slot(rank_, parity);
    for (int part = 0; part < size_; ++part) {
      std::memcpy(slot + part * count * item, source + (part * n + offset) * item, count * item);
    }
    sync_.post(step);
    sync_.wait_posted(step);
    for (int r = 0; r < size_; ++r) inputs[r] = segment_.slot(r, parity) + rank_ * count * item;
    reduce(dtype, op, target + offset * item, inputs.data(), size_, count);
  }
}

void Collectives::barrier() {
  const uint64_t step = sync_.next_step();
  sync_.post(step);
  sync_.wait_posted(step);
}

}  // namespace gradwire::shm
