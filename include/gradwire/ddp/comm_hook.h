// Communication hooks: how DistributedDataParallel reduces one bucket of gradients.
//
// The reducer hands each full bucket to the hook in bucket order (the same order on every rank)
// and waits on the returned future when backward ends. The future's tensor is the bucket's
// *averaged* gradient: the reducer writes it to the parameters' .grad unchanged. A hook either
// divides by comm.size() itself, or declares divides_on_fill(comm): then the reducer divides each
// gradient while copying it into the bucket (saving a pass over the buffer) and the hook only
// sums. The built-in hooks reduce with ReduceOp::kAvg where the communicator divides inside its
// reduction (Communicator::averages_while_reducing: shm, nccl), and divide on fill elsewhere, so
// the division never costs a pass of its own.
//
// Built in (see make_comm_hook):
//   "allreduce"  allreduce-sum in place (the default).
//   "fp16"       cast to float16, allreduce, cast back (half the bytes on the wire).
//   "bf16"       the same with bfloat16 (wider range than fp16, fewer mantissa bits).
//   "noop"       nothing: measures DDP's cost without the reduction (not for training).
//
// Thread safety: run() is called from the autograd thread that made the bucket ready; a hook
// object belongs to one DistributedDataParallel instance and needs no locking of its own.
#pragma once

#include <ATen/Tensor.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gradwire/comm/communicator.h"

namespace gradwire::ddp {

// One bucket of gradients, ready to reduce.
struct GradBucket {
  size_t index = 0;      // position in the reduction order, 0 first
  bool is_last = false;  // the last bucket of this iteration
  at::Tensor buffer;     // flat, contiguous: every gradient of the bucket back to back
  std::vector<at::Tensor> parameters;  // the bucket's parameters, in buffer order
  std::vector<at::Tensor> gradients;   // views of `buffer`, one per parameter, shaped like it
};

// The result of a hook: a reduced bucket that may still be in flight.
class BucketFuture {
 public:
  virtual ~BucketFuture() = default;
  // Blocks until the reduction is done; returns the averaged flat tensor (the bucket's numel and
  // dtype; it may be the bucket's own buffer). Throws what Work::wait throws.
  virtual at::Tensor wait() = 0;
};

// A future that waits on `work` and then returns finish() (run once, on the waiting thread).
std::shared_ptr<BucketFuture> make_bucket_future(WorkHandle work,
                                                 std::function<at::Tensor()> finish);

class CommHook {
 public:
  virtual ~CommHook() = default;
  virtual std::string name() const = 0;
  // True: buckets reduced over `comm` arrive already divided by comm.size(); run() must only sum
  // them. Asked once, when the reducer is built.
  virtual bool divides_on_fill(const Communicator& /*comm*/) const { return false; }
  // Starts reducing `bucket` over `comm`; must not block on the network. Every rank calls it
  // for the same bucket in the same order. The bucket (and its buffer) stay alive and untouched
  // until the future has been waited on.
  virtual std::shared_ptr<BucketFuture> run(Communicator& comm, GradBucket& bucket) = 0;
};

std::shared_ptr<CommHook> allreduce_hook();
std::shared_ptr<CommHook> fp16_compress_hook();
std::shared_ptr<CommHook> bf16_compress_hook();
// Communicates nothing (each rank keeps its own gradients, copied as allreduce_hook's): measures
// DDP without its reduction, as PyTorch's debugging noop_hook. Not for training.
std::shared_ptr<CommHook> noop_hook();
// "allreduce", "fp16", "bf16" or "noop"; InvalidArgument naming the known hooks otherwise.
std::shared_ptr<CommHook> make_comm_hook(const std::string& name);
std::vector<std::string> comm_hook_names();

}  // namespace gradwire::ddp
