// Join: DistributedDataParallel with uneven inputs (PyTorch's torch.distributed.algorithms.Join
// with DDP as its Joinable).
//
//   {
//     gradwire::ddp::Join join(ddp);          // every rank, before its first forward
//     for (auto& [x, y] : my_batches) {        // as many batches as this rank has
//       opt.zero_grad();
//       criterion(ddp(x), y).backward();
//       opt.step();
//     }
//     join.finish();                           // (or leave the scope) shadows the others
//   }
//
// Without a Join, a rank that runs out of batches leaves the others waiting in their next
// collective until the communicator's timeout. With one:
//  - While a rank trains, each of its forwards that communicates (a synchronised one, or any one
//    that broadcasts buffers) starts with one small allreduce: which ranks still train, and
//    whether they synchronise gradients in this iteration.
//  - A rank that has run out calls finish(): it "joins". It then shadows the others: it takes part
//    in that allreduce with "joined", in the buffer broadcast, and, when the others synchronise,
//    in every bucket's reduction with zero gradients, through the same comm hook, in the same
//    bucket order and layout (the first iteration's rebuild included), and in the used-parameter
//    exchange of find_unused_parameters. Iterations under no_sync are not shadowed.
//  - When every rank has joined, the parameters and buffers of the last rank(s) to join are
//    broadcast to the others, whose optimizer stopped when they ran out. finish() then returns.
//
// Divisor (JoinOptions::divide_by_initial_world_size): the gradients of an iteration are the sum
// over the ranks still training divided by the world size (default, PyTorch's default), or by
// the number of ranks still training in that iteration.
//
// Rules: every rank constructs the Join before its first forward under it, with the same
// options; one forward per synchronised backward (as without Join); a rank that has called
// finish() does not call the wrapper again until finish() returned. Every wait is a collective
// with the communicator's timeout, so a rank that never reaches the Join makes the others fail
// (TimeoutError naming it) instead of hanging. docs/ddp.md, "Join: uneven inputs", has the rest.
//
// Thread safety: as DistributedDataParallel: the training loop's thread.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>

#include "gradwire/ddp/ddp.h"

namespace gradwire::ddp {

struct JoinOptions {
  // true: divide an iteration's summed gradients by the world size, so that a joined rank counts
  // as a zero gradient (PyTorch's divide_by_initial_world_size = True, its default). false: by
  // the number of ranks still training in that iteration (the mean over the batches trained).
  bool divide_by_initial_world_size = true;
};

// What one rank did in its Join.
struct JoinResult {
  // The others' forwards this rank took part in after it joined.
  int64_t shadowed_forwards = 0;
  // Of those, the ones whose backward it shadowed (synchronised: buckets reduced with zeros).
  int64_t shadowed_backwards = 0;
  // The rank whose parameters and buffers every rank took at the end (the lowest of the last to
  // join), or -1 when no rank had joined before the others (nothing to synchronise).
  int final_model_root = -1;
};

// Attaches to one DistributedDataParallel for its lifetime (at most one Join at a time; a Join
// must not outlive its DistributedDataParallel). Construction does not communicate.
class Join {
 public:
  template <typename ModuleType>
  explicit Join(DistributedDataParallel<ModuleType>& ddp, JoinOptions options = {})
      : Join(*ddp.core_, options) {}
  // Calls finish() unless it was called, or unless the scope is left by an exception (then it
  // only detaches: this rank stops, and the others' collectives fail after their timeout).
  // An error of that finish() propagates from the destructor: keep a Join a local variable, or
  // call finish() yourself.
  ~Join() noexcept(false);
  Join(const Join&) = delete;
  Join& operator=(const Join&) = delete;

  // This rank has no more inputs: shadows the others until every rank has joined, then takes the
  // final model (see above) and detaches. Collective, blocking; each of its waits is bounded by
  // the communicator's timeout (TimeoutError, PeerLostError). InvalidArgument when the ranks
  // still training disagree about no_sync. A second call returns the first call's result.
  JoinResult finish();

 private:
  Join(detail::DdpCore& core, const JoinOptions& options);

  detail::DdpCore* core_;
  std::optional<JoinResult> result_;
  bool attached_ = false;
  int uncaught_at_start_ = std::uncaught_exceptions();
};

}  // namespace gradwire::ddp
