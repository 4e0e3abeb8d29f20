// The hierarchical backend: for jobs whose ranks span hosts and share them. Allreduce runs in
// three steps: an shm allreduce among the ranks of each host, a Gloo allreduce among one leader
// per host (its lowest rank), and an shm broadcast from the leader back to its host. The other
// collectives (broadcast, allgather, barrier) and send/recv go to a Gloo group of all ranks;
// reduce_scatter runs as the ring over that Gloo group (core/ring_reduce_scatter.h).
//
// Degenerate layouts need no special casing by the caller: with one host only shm runs; with one
// rank per host only the leaders' Gloo group does.
//
// Built collectively by every rank of the communicator: exchanges host identities through the
// store (hierarchical/host_identity.h), then builds the Gloo group of all ranks (store prefix "all"), the shm
// group of its host ("host/<index>", when the host has several ranks) and, on leaders, the Gloo
// group of leaders ("leaders", when there are several hosts).
//
// Thread safety: operations may be issued from any thread. Collectives run one after another on
// one progress thread, in issue order; send/recv go to the Gloo group at once. Nothing throws on
// the progress thread: a failure completes the operation's work with a std::runtime_error naming
// the step, the host and its ranks (C10dCommunicator turns it into a gradwire error), and fails
// every later collective of this group the same way.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "comm/core/c10d_adapter.h"
#include "comm/hierarchical/host_identity.h"
#include "comm/core/serial_work_queue.h"
#include "comm/shm/process_group.h"

namespace gradwire {

struct HierarchicalOptions {
  // This rank's host identity (local_host_identity()).
  std::string host_identity;
  // Settings of both Gloo groups (all ranks, leaders).
  c10d_adapter::GlooSettings gloo;
  // Settings of the shm group of this host.
  shm::Options shm;
  // Limit for building the groups and for each collective, from when it starts running.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

class HierarchicalProcessGroup : public c10d_adapter::BackendBase {
 public:
  // Blocks until the groups are built (every rank of the communicator must construct one).
  HierarchicalProcessGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                           HierarchicalOptions options);
  // Fails queued collectives and stops the progress thread.
  ~HierarchicalProcessGroup() override;

  const std::string getBackendName() const override { return "hierarchical"; }
  const HostLayout& layout() const { return layout_; }

  // Inputs: exactly one contiguous CPU tensor per call (as C10dCommunicator passes them).
  // allreduce: sum, avg, min, max of float, double, half, bfloat16, int8, uint8, int32, int64;
  // bfloat16 is reduced among leaders in float32.
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& options) override;
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& options) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& options) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& options) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;

 private:
  // What the progress thread is doing now, for messages of a wait that timed out.
  struct Progress {
    std::mutex mutex;
    // Guarded by mutex: the step the progress thread is in, or the last step of the job it ran
    // last, until the next job starts (Note [last step] in process_group.cpp); empty before a
    // job's first step.
    std::string step;
  };

  // Queues `run`, called on the progress thread with the operation's deadline.
  c10::intrusive_ptr<c10d::Work> enqueue(
      std::string what, std::function<void(std::chrono::steady_clock::time_point)> run);
  // Records the step the progress thread is in (empty: none).
  void note_step(std::string step);
  SerialWorkQueueOptions queue_options();
  // Runs one step to completion: issues it, waits until the operation's deadline (in slices, so
  // that the destructor can end the wait). Throws a std::runtime_error naming the step when it
  // fails, times out or is aborted.
  void run_step(const std::string& step,
                const std::function<c10::intrusive_ptr<c10d::Work>()>& issue,
                std::chrono::steady_clock::time_point deadline);
  void hierarchical_allreduce(at::Tensor tensor, c10d::ReduceOp op,
                              std::chrono::steady_clock::time_point deadline);

  HierarchicalOptions options_;
  HostLayout layout_;
  int host_ = 0;                      // this rank's host index
  c10d_adapter::BackendPtr all_;      // Gloo, every rank
  c10d_adapter::BackendPtr local_;    // shm, this host's ranks; null when alone on the host
  c10d_adapter::BackendPtr leaders_;  // Gloo, one rank per host; null unless leader of 2+ hosts
  std::shared_ptr<Progress> progress_state_ = std::make_shared<Progress>();
  std::atomic<bool> aborting_{false};  // set by the destructor; ends a step's wait early

  SerialWorkQueue queue_;  // last: its thread runs jobs that use everything above
};

}  // namespace gradwire
