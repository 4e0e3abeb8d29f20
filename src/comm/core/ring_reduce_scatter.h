// A bandwidth-optimal reduce-scatter over a backend's point-to-point send/recv, for backends that
// have no reduce_scatter of their own (Gloo, and hierarchical, whose send/recv are Gloo's).
//
// The ring: the input is `size` chunks; in step k (k = 0 .. size-2) rank r sends one chunk to
// rank r+1 and receives one from rank r-1, reducing it with its own input chunk into an
// accumulator, which it sends on in step k+1 (ring_step below). After size-1 steps rank r holds
// chunk r reduced over all ranks. Every rank sends (size-1)/size of its input once, against
// 2 (size-1)/size of it plus a full copy for an allreduce of the whole input.
//
// Chunks travel in segments (RingReduceScatterOptions::segment_bytes): the receives of a step
// and of the next are posted up front, and segment j of step k+1 is sent as soon as segment j of
// step k is reduced, so the reduction of one segment overlaps the transfer of the others.
// bfloat16 and half are accumulated in float32 (partial sums travel as float32; the first step
// sends the input as it is) and rounded once into the output; avg is a sum divided once.
//
// Thread safety: enqueue() may be called from any thread. Operations run one after another on one
// progress thread (started by the first enqueue), in enqueue order, which every rank must keep
// the same. Nothing throws on the progress thread: a failure (timeout, lost peer, backend error)
// completes the operation's work with a std::runtime_error naming the step and the peer, and
// fails every later operation the same way (the peers' messages are out of step). The destructor
// aborts the operation in progress and fails the queued ones.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "comm/core/c10d_adapter.h"
#include "gradwire/comm/communicator.h"
#include "comm/core/serial_work_queue.h"

namespace gradwire {

struct RingReduceScatterOptions {
  int rank = 0;
  int size = 1;
  // Limit for each operation, counted from when it starts running on the progress thread.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // Largest message, in bytes of the accumulation dtype. Default 1 MiB.
  int64_t segment_bytes = int64_t{1} << 20;
  // The tags of the ring's messages: [first_tag, first_tag + tag_count), reused cyclically.
  // User send/recv on the same backend must not use them. Default: 2^30 .. 2^31-1.
  int first_tag = 1 << 30;
  int tag_count = 1 << 30;
};

// Which chunks rank `rank` of `size` sends and receives in ring step `step` (0 .. size-2).
struct RingStep {
  int send_chunk;
  int recv_chunk;
};
RingStep ring_step(int rank, int size, int step);

// Number of segments of a chunk of `chunk_elements` elements with at most `segment_elements`
// each (at least one segment, also for an empty chunk).
int64_t ring_segment_count(int64_t chunk_elements, int64_t segment_elements);

class RingReduceScatter {
 public:
  // `backend` carries the messages (its send/recv); it outlives nothing here but is kept alive.
  RingReduceScatter(c10d_adapter::BackendPtr backend, RingReduceScatterOptions options);
  // Aborts the operation in progress, fails the queued ones, joins the progress thread.
  ~RingReduceScatter();
  RingReduceScatter(const RingReduceScatter&) = delete;
  RingReduceScatter& operator=(const RingReduceScatter&) = delete;

  // Queues a reduce-scatter of `input` (size * output.numel() elements, contiguous) into
  // `output` (contiguous, same dtype, shm::reducible(dtype), non-empty) and returns its work at
  // once; the caller has checked the arguments. The tensors are kept alive by the work's
  // operation and must not be touched until the work completed. Non-blocking.
  c10d_adapter::WorkPtr enqueue(at::Tensor input, at::Tensor output, ReduceOp op);

 private:
  class Run;
  struct Pending;
  // What the progress thread is doing, for the message of a wait that timed out. Shared with the
  // works, which may outlive this object.
  struct Status {
    std::mutex mutex;
    // Guarded by mutex: what the progress thread waits for, or the last of the operation it ran
    // last, until the next starts; empty before an operation's first wait.
    std::string step;
  };

  void set_step(std::string step);
  // Waits for a send or receive of the running operation until `deadline`; throws a
  // std::runtime_error starting with `what` when it fails, times out or is aborted.
  void wait_for(const c10d_adapter::WorkPtr& work, std::chrono::steady_clock::time_point deadline,
                const std::string& what);

  c10d_adapter::BackendPtr backend_;
  RingReduceScatterOptions options_;
  std::shared_ptr<Status> status_ = std::make_shared<Status>();

  std::mutex mutex_;  // guards stopping_, next_tag_, waiting_on_, queue_
  bool stopping_ = false;
  int64_t next_tag_ = 0;  // offset in the tag range of the next operation's first message
  // The send or receive the progress thread waits on; the destructor aborts it.
  c10d_adapter::WorkPtr waiting_on_;
  // Runs the operations in enqueue order; created by the first enqueue (most communicators never
  // reduce-scatter, and need no thread for it).
  std::unique_ptr<SerialWorkQueue> queue_;
};

}  // namespace gradwire
