// Broadcasting many small tensors as a few large messages.
#pragma once

#include <ATen/Tensor.h>

#include <vector>

#include "gradwire/comm/communicator.h"

namespace gradwire::ddp {

// Overwrites every tensor with root's values. Tensors are packed into one flat buffer per dtype
// and device, so a model's hundreds of parameters cost a handful of broadcasts. Blocks; collective
// (every rank passes tensors of the same dtypes and shapes in the same order). Works on leaf
// tensors that require grad (copies without recording autograd history).
void broadcast_coalesced(Communicator& comm, const std::vector<at::Tensor>& tensors, int root);

}  // namespace gradwire::ddp
