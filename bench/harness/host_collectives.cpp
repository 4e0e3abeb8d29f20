#include "harness/host_collectives.h"

namespace gradwire::bench {

namespace {

at::Tensor on_device(Communicator& communicator, const at::Tensor& values) {
  return values.contiguous().to(communicator.device(), /*non_blocking=*/false, /*copy=*/true);
}

}  // namespace

at::Tensor host_allreduce(Communicator& communicator, const at::Tensor& values, ReduceOp op) {
  at::Tensor buffer = on_device(communicator, values);
  communicator.allreduce(buffer, op)->wait(communicator.timeout());
  return buffer.cpu();
}

at::Tensor host_broadcast(Communicator& communicator, const at::Tensor& values, int root) {
  at::Tensor buffer = on_device(communicator, values);
  communicator.broadcast(buffer, root)->wait(communicator.timeout());
  return buffer.cpu();
}

at::Tensor host_allgather(Communicator& communicator, const at::Tensor& values) {
  const at::Tensor input = on_device(communicator, values.reshape({-1}));
  at::Tensor output = at::empty({communicator.size() * input.numel()}, input.options());
  communicator.allgather(input, output)->wait(communicator.timeout());
  return output.cpu();
}

}  // namespace gradwire::bench
