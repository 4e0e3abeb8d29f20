// A Communicator over a c10d backend (ProcessGroupGloo or ProcessGroupNCCL). What a backend lacks
// natively (Gloo: bfloat16 arithmetic, AVG, reduce_scatter) is supplied here, described by
// BackendTraits, so the Communicator contract holds on every backend.
#pragma once

#include <functional>
#include <map>
#include <mutex>

#include "comm/core/c10d_adapter.h"
#include "gradwire/comm/communicator.h"
#include "comm/diagnostics/peer_table.h"
#include "comm/diagnostics/progress_board.h"
#include "comm/core/ring_reduce_scatter.h"
#include "comm/core/work.h"

namespace gradwire {

struct BackendTraits {
  std::string name;
  bool native_avg = false;   // the backend implements ReduceOp::AVG
  bool avg_in_pass = false;  // ... inside its reduction, at no cost over SUM (implies native_avg)
  bool native_bfloat16 = false;  // the backend reduces bfloat16 itself
  // The backend implements reduce_scatter. Otherwise C10dCommunicator runs a ring over the
  // backend's send/recv (core/ring_reduce_scatter.h), whose messages use the tags 2^30 .. 2^31-1:
  // user send/recv on such a communicator must keep below 2^30.
  bool native_reduce_scatter = false;
  c10::Device device{c10::kCPU};  // collectives take tensors on this device's type
  // Work::wait() without a timeout orders the caller's current device stream after the operation
  // and returns without blocking the host (nccl, as PyTorch's work.wait()); the backend's own
  // watchdog enforces the timeout and the next wait() throws what it found.
  bool stream_ordered_wait = false;
  // Builds the backend for `size` members on `store` (already prefixed).
  std::function<c10d_adapter::BackendPtr(const c10::intrusive_ptr<c10d::Store>&, int rank,
                                         int size)>
      make;
};

// Shared by a world communicator and the communicators split from it.
struct CommunicatorShared {
  c10::intrusive_ptr<c10d::Store> store;
  BackendTraits traits;
  std::chrono::milliseconds timeout{0};
  std::shared_ptr<const PeerTable> peers;
  // Stream-ordered backends only (traits.stream_ordered_wait), else null: the works whose wait()
  // returned before the device finished them; every operation checks them first.
  std::shared_ptr<UnfinishedWorks> unfinished;

  // The store connection of the communicators' progress boards (connect_board_store), made by
  // the first communicator. Guarded by board_store_mutex.
  std::mutex board_store_mutex;
  c10::intrusive_ptr<c10d::Store> board_store;
};

class C10dCommunicator : public Communicator {
 public:
  // Joins the members (named by their world ranks) under `prefix` and builds the backend.
  // Blocks until every member joined; TimeoutError names the absent ones. Every collective is
  // numbered and noted on the communicator's progress board (`prefix`/progress/<rank>) once
  // issued, so that a timeout can say which ranks never reached it (diagnostics/desync_report.h).
  C10dCommunicator(std::shared_ptr<CommunicatorShared> shared, std::string prefix, int rank,
                   std::vector<int> world_ranks);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(world_ranks_.size()); }
  std::string backend() const override { return shared_->traits.name; }
  bool averages_while_reducing() const override { return shared_->traits.avg_in_pass; }
  at::Device device() const override { return shared_->traits.device; }
  const std::vector<int>& world_ranks() const override { return world_ranks_; }
  std::chrono::milliseconds timeout() const override { return shared_->timeout; }

  WorkHandle allreduce(at::Tensor& tensor, ReduceOp op) override;
  WorkHandle broadcast(at::Tensor& tensor, int root) override;
  WorkHandle allgather(const at::Tensor& input, at::Tensor& output) override;
  WorkHandle reduce_scatter(const at::Tensor& input, at::Tensor& output, ReduceOp op) override;
  WorkHandle barrier() override;
  WorkHandle send(const at::Tensor& tensor, int dst_rank, int tag) override;
  WorkHandle recv(at::Tensor& tensor, int src_rank, int tag) override;
  std::shared_ptr<Communicator> split(const std::vector<int>& ranks) override;
  // The backend's shared buffer when it is a SharedBufferSource (shm), else ordinary memory.
  at::Tensor shared_buffer(int64_t numel, at::ScalarType dtype) override;

 private:
  void check_tensor(const char* op, const at::Tensor& tensor) const;
  void check_rank(const char* op, const char* what, int rank) const;
  // The handle of an issued operation; collectives are numbered on the progress board.
  WorkHandle wrap(c10d_adapter::WorkPtr work, std::string description,
                  std::function<void()> finish = nullptr, bool collective = true) const;

  std::shared_ptr<CommunicatorShared> shared_;
  std::string prefix_;
  int rank_;
  std::vector<int> world_ranks_;
  c10d_adapter::BackendPtr backend_;
  // reduce_scatter for backends without one (or without bfloat16 arithmetic), size() > 1.
  std::unique_ptr<RingReduceScatter> ring_;
  std::shared_ptr<ProgressBoard> board_;  // null when the store connection could not be made

  std::mutex split_mutex_;                   // guards split_counts_
  std::map<std::string, int> split_counts_;  // how often each rank list was split
};

// Tensors Gloo cannot move as themselves (bfloat16, int16, bool) viewed as a same-width type it
// can (half, uint8). Only for operations without arithmetic.
at::Tensor as_transport_dtype(const at::Tensor& tensor);

}  // namespace gradwire
