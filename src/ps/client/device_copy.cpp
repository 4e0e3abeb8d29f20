#include "device_copy.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace gradwire::ps {

at::Tensor staging_buffer(at::IntArrayRef sizes, const c10::Device& device) {
  return at::empty(sizes, at::TensorOptions().dtype(at::kFloat).pinned_memory(!device.is_cpu()));
}

at::Tensor to_module_device(const at::Tensor& host, const c10::Device& device) {
  if (device.is_cpu()) return host;
  at::Tensor pinned = host;
  if (!host.is_pinned()) {
    pinned = at::empty(host.sizes(), host.options().pinned_memory(true));
    pinned.copy_(host);
  }
  return pinned.to(device, /*non_blocking=*/true);
}

at::Tensor to_host(const at::Tensor& tensor) {
  if (tensor.device().is_cpu()) return tensor.contiguous();
  at::Tensor pinned =
      at::empty(tensor.sizes(), tensor.options().device(at::kCPU).pinned_memory(true));
  pinned.copy_(tensor, /*non_blocking=*/true);
  c10::impl::getDeviceGuardImpl(tensor.device().type())->getStream(tensor.device()).synchronize();
  return pinned;
}

}  // namespace gradwire::ps
