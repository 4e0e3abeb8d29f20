// One round of a Join (include/gradwire/ddp/join.h, docs/ddp.md "Join: uneven inputs"): the small
// allreduce that a training rank makes at each forward that communicates, and that a joined rank
// makes in its shadow loop. Every rank contributes an int32 vector of world_size + 1 values:
// 1 at its own index while it trains (0 once joined), then 1 if it synchronises gradients in this
// iteration. The sum tells every rank the same facts: who still trains (so the divisor and the
// rank whose buffers count), whether the backward is synchronised, and whether all have joined.
// The contribution and the reading of the sum are pure functions, apart from the exchange.
#pragma once

#include <ATen/Tensor.h>

#include <vector>

#include "gradwire/comm/communicator.h"

namespace gradwire::ddp {

struct JoinRound {
  std::vector<int> training;   // ranks still training, ascending; empty: every rank has joined
  bool synchronising = false;  // the training ranks synchronise gradients in this iteration

  bool all_joined() const { return training.empty(); }
  // The rank whose buffers are broadcast (and, after the last round, whose model every rank
  // takes): the lowest still training, as rank 0 without a Join. Precondition: !all_joined().
  int root() const;
};

// This rank's contribution to a round (CPU, int32, world_size + 1 elements).
at::Tensor join_contribution(int rank, int world_size, bool training, bool synchronising);

// Reads the sum of every rank's contribution. InvalidArgument when some training ranks
// synchronise and others do not (no_sync on some ranks only); every rank reads the same sum, so
// every rank throws alike.
JoinRound read_join_round(const at::Tensor& sum);

// Contributes, allreduces over comm's device (blocking, the communicator's timeout) and reads.
JoinRound exchange_join_round(Communicator& comm, bool training, bool synchronising);

}  // namespace gradwire::ddp
