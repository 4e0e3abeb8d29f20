// The Communicator: the only view of collectives that DDP, the parameter server and the
// benchmarks get. Backends (c10d Gloo for CPU tensors, c10d NCCL for CUDA tensors when built with
// CUDA) live in src/comm and are chosen by name in InitOptions::backend.
//
// Contract for every collective:
//  - It is asynchronous: it returns a WorkHandle at once; the result in the given tensors is
//    defined only after Work::wait() returns. Until then the caller must not touch the tensors.
//  - Every rank of the communicator calls the same collectives in the same order with tensors of
//    the same dtype and shape (allgather/reduce_scatter: see their shapes).
//  - Tensors must be contiguous and on the backend's device; otherwise InvalidArgument.
//  - Supported dtypes: float, double, half, bfloat16, int8/uint8/int32/int64. (Gloo has no
//    bfloat16 arithmetic: the Gloo backend reduces bfloat16 in float32 and rounds once.)
//  - Failures surface from wait(): TimeoutError after the timeout, PeerLostError when a peer went
//    away (naming the ranks found dead), BackendError otherwise. Each message names the
//    operation, the ranks involved and the time waited.
//  - On CUDA (nccl), as with PyTorch's work.wait(): wait() without a timeout makes the calling
//    thread's current CUDA stream wait for the operation and returns without blocking the host;
//    the result is defined for work queued on that stream afterwards. NCCL's watchdog enforces the
//    communicator's timeout and the next wait() throws what it found. wait(timeout) blocks the
//    host until the operation has finished.
//
// Thread safety: a Communicator may be used from several threads, but the order in which
// collectives are issued must match on every rank; Work handles may be waited on any thread.
#pragma once

#include <ATen/Tensor.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gradwire {

enum class ReduceOp { kSum, kAvg, kMin, kMax };
// "sum", "avg", "min", "max".
const char* to_string(ReduceOp op);

// A handle to an operation in flight.
class Work {
 public:
  virtual ~Work() = default;
  // Blocks until the operation is done and its results are written (nccl, no timeout given: the
  // current CUDA stream waits instead of the host; see the contract above). timeout: nullopt means
  // the communicator's timeout. Throws TimeoutError, PeerLostError or BackendError. Calling wait()
  // again after success returns at once; after a failure it throws the same error again.
  virtual void wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt) = 0;
  // True once the backend has finished (successfully or not). Non-blocking.
  virtual bool is_completed() = 0;
};
using WorkHandle = std::shared_ptr<Work>;

class Communicator {
 public:
  virtual ~Communicator() = default;

  // This process's index in the communicator, 0..size()-1.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Backend name: "gloo", "shm", "hierarchical" or "nccl".
  virtual std::string backend() const = 0;
  // The world rank of each member, indexed by rank() (identity for the world communicator).
  virtual const std::vector<int>& world_ranks() const = 0;
  // Default timeout used by wait() (InitOptions::timeout / GRADWIRE_TIMEOUT).
  virtual std::chrono::milliseconds timeout() const = 0;

  // In place: every rank ends with op applied elementwise over all ranks' `tensor`.
  // kAvg on integer tensors is InvalidArgument (the mean is not an integer).
  virtual WorkHandle allreduce(at::Tensor& tensor, ReduceOp op = ReduceOp::kSum) = 0;
  // In place: every rank ends with root's `tensor`. root is a rank of this communicator.
  virtual WorkHandle broadcast(at::Tensor& tensor, int root) = 0;
  // output.numel() == size() * input.numel(); output holds rank 0's input, then rank 1's, ...
  virtual WorkHandle allgather(const at::Tensor& input, at::Tensor& output) = 0;
  // input.numel() == size() * output.numel(); rank r's output = op over ranks of input chunk r.
  virtual WorkHandle reduce_scatter(const at::Tensor& input, at::Tensor& output,
                                    ReduceOp op = ReduceOp::kSum) = 0;
  // Completes once every rank has called barrier().
  virtual WorkHandle barrier() = 0;
  // Point to point. Matching send/recv pairs use the same tag and tensor size. Tags from 2^30 up
  // are reserved (the Gloo ring reduce_scatter uses them).
  virtual WorkHandle send(const at::Tensor& tensor, int dst_rank, int tag = 0) = 0;
  virtual WorkHandle recv(at::Tensor& tensor, int src_rank, int tag = 0) = 0;

  // A zero-filled contiguous CPU tensor of `numel` elements of `dtype` in memory that this
  // communicator's allreduce reduces in place, without staging copies: on the shm backend every
  // rank maps every rank's buffer (docs/communicator.md, "Shared buffers"); other backends, and
  // the default, return ordinary memory (at::zeros). Collective: every rank calls it with the
  // same arguments, in order with the collectives; blocks until done (at most timeout()).
  // An allreduce of a tensor lying in such a buffer must be matched on every rank by an allreduce
  // of the same place (same buffer, same offset) of that rank's buffer; anything else fails like
  // mismatched collectives. The tensor may outlive the communicator.
  virtual at::Tensor shared_buffer(int64_t numel, at::ScalarType dtype);

  // True when allreduce with ReduceOp::kAvg divides inside the reduction's own pass, so that it
  // costs no more than kSum (shm, nccl). False when kAvg is a sum followed by a division over the
  // whole tensor (gloo, hierarchical; the default). DistributedDataParallel's built-in comm hooks
  // ask it to choose between dividing gradients on their way into a bucket and reducing with
  // kAvg (ddp/comm_hook.h).
  virtual bool averages_while_reducing() const { return false; }

  // The device its collectives take tensors on: CPU, or for nccl the CUDA device current when the
  // world was made (the launcher's LOCAL_RANK, set with c10::cuda::set_device before init()).
  // Callers put their own small tensors (DDP's model check, bucket order, used map) there.
  virtual at::Device device() const { return at::kCPU; }

  // A communicator over the given ranks of this one (sorted, distinct, containing rank()); its
  // rank() is this process's index in `ranks`. Called by the members only, in the same order on
  // each; blocks until all members joined or the timeout passed (TimeoutError naming the absent).
  virtual std::shared_ptr<Communicator> split(const std::vector<int>& ranks) = 0;
};

}  // namespace gradwire
