#include "backends.h"

#include <torch/cuda.h>

#include "gradwire/common/error.h"

namespace gradwire {

namespace {

bool is_loopback(const std::string& address) {
  return address == "localhost" || address == "::1" || address.rfind("127.", 0) == 0;
}

BackendTraits gloo_traits(const WorldInfo& world, const InitOptions& options, const EnvMap& env,
                          std::chrono::milliseconds timeout) {
  c10d_adapter::GlooSettings settings;
  settings.timeout = timeout;
  settings.threads = options.gloo_threads;
  settings.bind_address = options.bind_address;
  if (settings.bind_address.empty()) {
    settings.interface_name = env.get("GLOO_SOCKET_IFNAME").value_or("");
    if (settings.interface_name.empty() && is_loopback(world.master_addr)) {
      settings.bind_address = "127.0.0.1";
    }
  }
  BackendTraits traits;
  traits.name = "gloo";
  traits.device = c10::DeviceType::CPU;
  traits.make = [settings](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size) {
    return c10d_adapter::make_gloo(store, rank, size, settings);
  };
  return traits;
}

#if defined(GRADWIRE_WITH_NCCL)
BackendTraits nccl_traits(std::chrono::milliseconds timeout) {
  BackendTraits traits;
  traits.name = "nccl";
  traits.native_avg = true;
  traits.native_bfloat16 = true;
  traits.device = c10::DeviceType::CUDA;
  traits.make = [timeout](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size) {
    return c10d_adapter::make_nccl(store, rank, size, timeout);
  };
  return traits;
}
#endif

}  // namespace

std::vector<std::string> available_backends() {
#if defined(GRADWIRE_WITH_NCCL)
  return {"gloo", "nccl"};
#else
  return {"gloo"};
#endif
}

BackendTraits backend_traits(const std::string& name, const WorldInfo& world,
                             const InitOptions& options, const EnvMap& env,
                             std::chrono::milliseconds timeout) {
  std::string chosen = name;
  if (chosen == "auto") {
    chosen = "gloo";
#if defined(GRADWIRE_WITH_NCCL)
    if (torch::cuda::is_available()) chosen = "nccl";
#endif
  }
  if (chosen == "gloo") return gloo_traits(world, options, env, timeout);
#if defined(GRADWIRE_WITH_NCCL)
  if (chosen == "nccl") return nccl_traits(timeout);
#endif
  std::string choices = "auto";
  for (const auto& b : available_backends()) choices += ", " + b;
  throw InvalidArgument("gradwire: unknown or unavailable backend '" + name +
                        "'; this build offers: " + choices +
                        (name == "nccl" ? " (nccl needs a libtorch built with CUDA)" : ""));
}

}  // namespace gradwire
