// Copies between the host, where the client's calls read and write rows, and the device of a CUDA
// module (docs/ps.md "CUDA modules"), through pinned host buffers from libtorch's caching host
// allocator (which keeps a buffer until the copies queued on it have run) and asynchronous copies
// on the device's current stream. On the CPU both pass tensors through. Internal to
// src/ps/client.
#pragma once

#include <ATen/ATen.h>

namespace gradwire::ps {

// A pinned host tensor of `sizes` in float32 (a plain one when `device` is the CPU).
at::Tensor staging_buffer(at::IntArrayRef sizes, const c10::Device& device);

// `host` (on the CPU) on `device`: staged through a pinned buffer unless it is pinned already,
// then copied asynchronously on `device`'s current stream, where later work sees it. `host` may
// be reused once this returns. `host` itself when `device` is the CPU.
at::Tensor to_module_device(const at::Tensor& host, const c10::Device& device);

// `tensor` on the host, contiguous: from a device, copied asynchronously into a pinned buffer on
// the current stream and waited for (that stream only, not the whole device).
at::Tensor to_host(const at::Tensor& tensor);

}  // namespace gradwire::ps
