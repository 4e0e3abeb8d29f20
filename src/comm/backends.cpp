#include "backends.h"

#include <torch/cuda.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "gradwire/common/error.h"
#include "shm_process_group.h"

namespace gradwire {

namespace {

bool is_loopback(const std::string& address) {
  return address == "localhost" || address == "::1" || address.rfind("127.", 0) == 0;
}

c10d_adapter::GlooSettings gloo_settings(const WorldInfo& world, const InitOptions& options,
                                         const EnvMap& env, std::chrono::milliseconds timeout) {
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
  return settings;
}

BackendTraits gloo_traits(const WorldInfo& world, const InitOptions& options, const EnvMap& env,
                          std::chrono::milliseconds timeout) {
  const auto settings = gloo_settings(world, options, env, timeout);
  BackendTraits traits;
  traits.name = "gloo";
  traits.device = c10::DeviceType::CPU;
  traits.make = [settings](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size) {
    return c10d_adapter::make_gloo(store, rank, size, settings);
  };
  return traits;
}

// Shared memory within one host; send/recv through a Gloo group of the same ranks.
BackendTraits shm_traits(const WorldInfo& world, const InitOptions& options, const EnvMap& env,
                         std::chrono::milliseconds timeout) {
  if (world.local_world_size != world.world_size) {
    throw ConfigError("gradwire: backend 'shm' needs every rank on one host, but this job has " +
                      std::to_string(world.world_size) + " ranks of which " +
                      std::to_string(world.local_world_size) +
                      " run on this host (WORLD_SIZE vs LOCAL_WORLD_SIZE). Use backend 'gloo' "
                      "(GRADWIRE_BACKEND=gloo) for jobs spanning hosts.");
  }
  const auto gloo = gloo_settings(world, options, env, timeout);
  shm::ShmOptions shm_options;
  shm_options.port = world.master_port;
  shm_options.timeout = timeout;
  if (auto slot = env.get_int("GRADWIRE_SHM_SLOT_BYTES")) {
    if (*slot < 4096) {
      throw ConfigError("gradwire: GRADWIRE_SHM_SLOT_BYTES=" + std::to_string(*slot) +
                        " is too small; use at least 4096 (default 1048576)");
    }
    shm_options.slot_bytes = static_cast<size_t>(*slot);
  }
  BackendTraits traits;
  traits.name = "shm";
  traits.native_avg = true;
  traits.native_bfloat16 = true;
  traits.native_reduce_scatter = true;
  traits.device = c10::DeviceType::CPU;
  traits.make = [gloo, shm_options](const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                    int size) -> c10d_adapter::BackendPtr {
    auto point_to_point = c10d_adapter::make_gloo(
        c10::make_intrusive<c10d::PrefixStore>("p2p", store), rank, size, gloo);
    return c10::make_intrusive<shm::ShmProcessGroup>(store, rank, size, shm_options,
                                                     std::move(point_to_point));
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
  return {"gloo", "shm", "nccl"};
#else
  return {"gloo", "shm"};
#endif
}

BackendTraits backend_traits(const std::string& name, const WorldInfo& world,
                             const InitOptions& options, const EnvMap& env,
                             std::chrono::milliseconds timeout) {
  std::string chosen = name;
  if (chosen == "auto") chosen = env.get("GRADWIRE_BACKEND").value_or("auto");
  if (chosen == "auto") {
    chosen = "gloo";
#if defined(GRADWIRE_WITH_NCCL)
    if (torch::cuda::is_available()) chosen = "nccl";
#endif
  }
  if (chosen == "gloo") return gloo_traits(world, options, env, timeout);
  if (chosen == "shm") return shm_traits(world, options, env, timeout);
#if defined(GRADWIRE_WITH_NCCL)
  if (chosen == "nccl") return nccl_traits(timeout);
#endif
  std::string choices = "auto";
  for (const auto& b : available_backends()) choices += ", " + b;
  throw InvalidArgument("gradwire: unknown or unavailable backend '" + chosen + "'" +
                        (chosen != name ? " (from GRADWIRE_BACKEND)" : "") +
                        "; this build offers: " + choices +
                        (chosen == "nccl" ? " (nccl needs a libtorch built with CUDA)" : ""));
}

}  // namespace gradwire
