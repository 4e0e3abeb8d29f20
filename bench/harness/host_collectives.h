// Small collectives on host tensors over a run's communicator, whatever its device: the
// benchmarks agree on ports, flags and timings through the world they measure, which with
// --device cuda is NCCL and takes only GPU tensors. Each copies to the communicator's device,
// waits for the collective to finish and returns a CPU tensor.
#pragma once

#include <ATen/ATen.h>

#include "gradwire/comm/communicator.h"

namespace gradwire::bench {

// Elementwise `op` over every rank's `values`.
at::Tensor host_allreduce(Communicator& communicator, const at::Tensor& values, ReduceOp op);
// `root`'s `values` on every rank.
at::Tensor host_broadcast(Communicator& communicator, const at::Tensor& values, int root);
// Every rank's `values`, concatenated in rank order (flattened).
at::Tensor host_allgather(Communicator& communicator, const at::Tensor& values);

}  // namespace gradwire::bench
