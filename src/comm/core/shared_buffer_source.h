// What a c10d backend implements when it can hand out shared buffers (Communicator::
// shared_buffer): memory its collectives reduce in place. C10dCommunicator asks its backend for
// this interface; backends without it give ordinary memory.
#pragma once

#include <ATen/Tensor.h>

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "comm/core/c10d_adapter.h"
#include "gradwire/comm/communicator.h"

namespace gradwire {

class SharedBufferSource {
 public:
  virtual ~SharedBufferSource() = default;
  // Collective, issued in order with the backend's collectives: once the returned work has
  // completed, `*out` holds a zero-filled contiguous tensor of `numel` elements of `dtype`.
  virtual c10d_adapter::WorkPtr allocate_shared(int64_t numel, at::ScalarType dtype,
                                                std::shared_ptr<at::Tensor> out) = 0;
};

}  // namespace gradwire
