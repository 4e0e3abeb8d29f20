// The shm backend as a c10d process group, so C10dCommunicator (op descriptions, timed waits,
// error translation, split) serves it as it serves Gloo. Collectives run on one progress thread
// per group, in issue order, through Collectives over the group's segment; send/recv go to a
// Gloo group of the same ranks built beside it.
//
// Thread safety: collectives may be issued from any thread (a mutex guards only the queue of
// pending operations, not the data path). Work handles complete on the progress thread and are
// waited on the caller's thread. Nothing throws on the progress thread: a failure completes the
// operation's Work with a std::runtime_error (translated to gradwire errors by C10dCommunicator)
// and fails every later operation of this group the same way, since the peers' progress is then
// unknown.
#pragma once

#include <functional>
#include <limits>
#include <memory>

#include "comm/core/c10d_adapter.h"
#include "comm/core/serial_work_queue.h"
#include "comm/core/shared_buffer_source.h"
#include "comm/shm/collectives.h"
#include "comm/shm/segment.h"
#include "comm/shm/sync.h"

namespace gradwire::shm {

struct Options {
  // Names the segment (segment_name()); the job's MASTER_PORT.
  int port = 0;
  // Bytes per slot (each rank has two): the chunk of a large allreduce. Default 1 MiB.
  size_t slot_bytes = size_t{1} << 20;
  // Allreduces up to this size take the one-step algorithm. Default 64 KiB.
  size_t small_bytes = size_t{64} << 10;
  // Large allreduces of tensors from this size write them with non-temporal stores, which skip
  // reading each destination line first but leave the tensor out of the cache
  // (core/reduce_kernels.h). Default: never. On the development machine they made 4-256 MiB
  // allreduces 1.3-1.9x slower, since a gradient bucket is read again soon after
  // (docs/performance.md).
  size_t streaming_bytes = std::numeric_limits<size_t>::max();
  // Limit for joining the segment and for each operation, from when it starts running.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

class ProcessGroup : public c10d_adapter::BackendBase, public SharedBufferSource {
 public:
  // Collective over the `size` ranks using `store` (prefixed for this group): joins the segment
  // (shm/attach.h). `point_to_point` serves send/recv; it may be null (send/recv then fail).
  ProcessGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
               shm::Options options, c10d_adapter::BackendPtr point_to_point);
  // Fails pending operations and stops the progress thread.
  ~ProcessGroup() override;

  const std::string getBackendName() const override { return "shm"; }
  // Inputs: exactly one contiguous CPU tensor per call (as C10dCommunicator passes them).
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& options) override;
  // A tensor lying in one of this group's shared buffers (allocate_shared) is reduced in place
  // there; every rank must then pass the same place of its copy (else "collectives differ").
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& options) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& options) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& options) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& options) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;
  // A buffer every rank of the group maps (shm/shared_buffers.h); the tensor keeps the mappings
  // alive, also after the group is gone.
  c10::intrusive_ptr<c10d::Work> allocate_shared(int64_t numel, at::ScalarType dtype,
                                                 std::shared_ptr<at::Tensor> out) override;

 private:
  // The segment and what runs on it; shared with work handles so that a timed-out wait can say
  // which ranks the progress thread was waiting for.
  struct Core {
    Core(Segment segment, int rank, const shm::Options& options);
    Segment segment;
    StepSync sync;
    Collectives collectives;
    SharedBufferTable shared_buffers;
    uint64_t shared_buffer_count = 0;  // progress thread only
  };
  // Queues `run`; on the progress thread, the step sync begins the operation (its signature,
  // argument, deadline) before `run`.
  c10::intrusive_ptr<c10d::Work> enqueue(std::string what, uint64_t signature,
                                         std::function<void()> run, uint64_t argument = 0);

  shm::Options options_;
  std::shared_ptr<Core> core_;
  c10d_adapter::BackendPtr point_to_point_;
  SerialWorkQueue queue_;  // last: its thread runs jobs that use everything above
};

}  // namespace gradwire::shm
