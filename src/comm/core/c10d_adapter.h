// The one place that knows which libtorch version gradwire is built against. libtorch 1.13 has
// c10d::ProcessGroup as the base of ProcessGroupGloo/NCCL; 2.x splits it into ProcessGroup and
// Backend, and the backends derive from c10d::Backend. Everything else in src/comm uses the
// aliases and factories below.
#pragma once

#include <torch/version.h>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#if defined(GRADWIRE_WITH_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <cstdlib>
#include <string>

namespace gradwire::c10d_adapter {

#if TORCH_VERSION_MAJOR >= 2
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif
using BackendPtr = c10::intrusive_ptr<BackendBase>;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

// Whether this libtorch's TCPStore client speaks the protocol of a 2.x store server, such as the
// one torchrun 2.x's agent hosts for its rendezvous (1.13's client and 2.x's server do not
// understand each other: the client waits for ever).
inline constexpr bool kStoreClientSpeaks2x = TORCH_VERSION_MAJOR >= 2;

inline std::string torch_version_string() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

struct GlooSettings {
  std::chrono::milliseconds timeout;
  int threads = 2;
  // Address to bind; empty: GLOO_SOCKET_IFNAME (interface) if set, else the default device.
  std::string bind_address;
  std::string interface_name;
};

inline BackendPtr make_gloo(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                            const GlooSettings& settings) {
  auto options = c10d::ProcessGroupGloo::Options::create(settings.timeout);
  options->threads = settings.threads;
  if (!settings.interface_name.empty()) {
    options->devices.push_back(
        c10d::ProcessGroupGloo::createDeviceForInterface(settings.interface_name));
  } else if (!settings.bind_address.empty()) {
    options->devices.push_back(
        c10d::ProcessGroupGloo::createDeviceForHostname(settings.bind_address));
  } else {
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
}

#if defined(GRADWIRE_WITH_NCCL)
// The watchdog's action on a failed or timed-out NCCL collective when the user set none:
// CleanUpOnly (2) aborts the communicator, which releases the streams waiting on it, and keeps
// the process, so the next Work::wait() throws the failure as a gradwire error naming the ranks
// behind (the desync report). libtorch 2.x's own default, SkipCleanUp (3), ends the process at
// once; 1.13's is off. The variable is read when the process group is built.
inline void default_nccl_error_handling() {
  if (std::getenv("TORCH_NCCL_ASYNC_ERROR_HANDLING") == nullptr &&
      std::getenv("NCCL_ASYNC_ERROR_HANDLING") == nullptr) {
#if TORCH_VERSION_MAJOR >= 2
    ::setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "2", /*overwrite=*/0);
#else
    ::setenv("NCCL_ASYNC_ERROR_HANDLING", "2", /*overwrite=*/0);
#endif
  }
}

inline BackendPtr make_nccl(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                            std::chrono::milliseconds timeout) {
  default_nccl_error_handling();
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
}
#endif

}  // namespace gradwire::c10d_adapter
