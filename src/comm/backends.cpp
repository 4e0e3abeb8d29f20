#include "comm/backends.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>

#include <optional>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "comm/hierarchical/host_identity.h"
#include "comm/hierarchical/process_group.h"
#include "comm/shm/process_group.h"
#include "gradwire/common/error.h"
#include "gradwire/common/settings.h"

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
  traits.make = [settings](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size) {
    return c10d_adapter::make_gloo(store, rank, size, settings);
  };
  return traits;
}

shm::Options shm_options(const WorldInfo& world, const EnvMap& env,
                         std::chrono::milliseconds timeout) {
  shm::Options options;
  options.port = world.master_port;
  options.timeout = timeout;
  if (auto slot = env.get_int(settings::kShmSlotBytes.name)) {
    if (*slot < 4096) {
      throw ConfigError("gradwire: GRADWIRE_SHM_SLOT_BYTES=" + std::to_string(*slot) +
                        " is too small; use at least 4096 (default 1048576)");
    }
    options.slot_bytes = static_cast<size_t>(*slot);
  }
  if (auto streaming = env.get_int(settings::kShmStreamingBytes.name)) {
    if (*streaming < 0) {
      throw ConfigError("gradwire: GRADWIRE_SHM_STREAMING_BYTES=" + std::to_string(*streaming) +
                        " is negative; give a size in bytes (default: no streaming stores)");
    }
    options.streaming_bytes = static_cast<size_t>(*streaming);
  }
  return options;
}

// Shared memory within one host; send/recv through a Gloo group of the same ranks. The caller
// has checked that the ranks share a host.
BackendTraits shm_traits(const WorldInfo& world, const InitOptions& options, const EnvMap& env,
                         std::chrono::milliseconds timeout) {
  const auto gloo = gloo_settings(world, options, env, timeout);
  const auto shm = shm_options(world, env, timeout);
  BackendTraits traits;
  traits.name = "shm";
  traits.native_avg = true;
  traits.avg_in_pass = true;  // core/reduce_kernels.h: the sum is scaled as it is stored
  traits.native_bfloat16 = true;
  traits.native_reduce_scatter = true;
  traits.make = [gloo, shm](const c10::intrusive_ptr<c10d::Store>& store, int rank,
                            int size) -> c10d_adapter::BackendPtr {
    auto point_to_point = c10d_adapter::make_gloo(
        c10::make_intrusive<c10d::PrefixStore>("p2p", store), rank, size, gloo);
    return c10::make_intrusive<shm::ProcessGroup>(store, rank, size, shm,
                                                  std::move(point_to_point));
  };
  return traits;
}

// shm within each host, Gloo among hosts (hierarchical/process_group.h).
BackendTraits hierarchical_traits(const WorldInfo& world, const InitOptions& options,
                                  const EnvMap& env, std::chrono::milliseconds timeout) {
  HierarchicalOptions hierarchical;
  hierarchical.host_identity = local_host_identity(env);
  hierarchical.gloo = gloo_settings(world, options, env, timeout);
  hierarchical.shm = shm_options(world, env, timeout);
  hierarchical.timeout = timeout;
  BackendTraits traits;
  traits.name = "hierarchical";
  traits.native_avg = true;
  traits.native_bfloat16 = true;
  traits.make = [hierarchical](const c10::intrusive_ptr<c10d::Store>& store, int rank,
                               int size) -> c10d_adapter::BackendPtr {
    return c10::make_intrusive<HierarchicalProcessGroup>(store, rank, size, hierarchical);
  };
  return traits;
}

#if defined(GRADWIRE_WITH_NCCL)
BackendTraits nccl_traits(std::chrono::milliseconds timeout) {
  BackendTraits traits;
  traits.name = "nccl";
  traits.native_avg = true;
  traits.avg_in_pass = true;  // ncclAvg
  traits.native_bfloat16 = true;
  traits.stream_ordered_wait = true;
  // The device this process's ranks use: the one current when init() runs (set_device(LOCAL_RANK)).
  traits.device = c10::impl::getDeviceGuardImpl(c10::kCUDA)->getDevice();
  traits.make = [timeout](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size) {
    return c10d_adapter::make_nccl(store, rank, size, timeout);
  };
  return traits;
}
#endif

}  // namespace

std::vector<std::string> available_backends() {
#if defined(GRADWIRE_WITH_NCCL)
  return {"gloo", "shm", "hierarchical", "nccl"};
#else
  return {"gloo", "shm", "hierarchical"};
#endif
}

namespace {

// The world's host identities, exchanged once per resolution (key prefix gradwire/hosts).
class HostLookup {
 public:
  HostLookup(const WorldInfo& world, const EnvMap& env, std::chrono::milliseconds timeout,
             c10d::Store* store)
      : world_(world), env_(env), timeout_(timeout), store_(store) {}
  bool available() const { return store_ != nullptr; }
  const HostLayout& layout() {
    if (!layout_) {
      layout_ = plan_host_layout(exchange_host_identities(*store_, "gradwire/hosts", world_.rank,
                                                          world_.world_size,
                                                          local_host_identity(env_), timeout_));
    }
    return *layout_;
  }

 private:
  const WorldInfo& world_;
  const EnvMap& env_;
  std::chrono::milliseconds timeout_;
  c10d::Store* store_;
  std::optional<HostLayout> layout_;
};

void require_one_host(const WorldInfo& world, HostLookup& hosts) {
  if (hosts.available()) {
    const auto& layout = hosts.layout();
    if (!layout.single_host()) {
      throw ConfigError("gradwire: backend 'shm' needs every rank on one host, but this job's " +
                        std::to_string(world.world_size) + " ranks run on " +
                        std::to_string(layout.host_count()) + " hosts (" + layout.describe() +
                        "). Use backend 'auto' or 'hierarchical' (GRADWIRE_BACKEND) for jobs "
                        "spanning hosts.");
    }
    return;
  }
  // Without the store only the launcher's word is available.
  if (world.local_world_size != world.world_size) {
    throw ConfigError("gradwire: backend 'shm' needs every rank on one host, but this job has " +
                      std::to_string(world.world_size) + " ranks of which " +
                      std::to_string(world.local_world_size) +
                      " run on this host (WORLD_SIZE vs LOCAL_WORLD_SIZE). Use backend 'gloo' "
                      "or 'hierarchical' (GRADWIRE_BACKEND) for jobs spanning hosts.");
  }
}

[[noreturn]] void throw_unknown_backend(const std::string& chosen, bool from_environment) {
  std::string choices = "auto";
  for (const auto& b : available_backends()) choices += ", " + b;
  throw InvalidArgument("gradwire: unknown or unavailable backend '" + chosen + "'" +
                        (from_environment ? std::string(" (from ") + settings::kBackend.name + ")"
                                          : std::string()) +
                        "; this build offers: " + choices +
                        (chosen == "nccl" ? " (nccl needs a libtorch built with CUDA)" : ""));
}

BackendTraits choose_traits(const std::string& name, const WorldInfo& world,
                            const InitOptions& options, const EnvMap& env,
                            std::chrono::milliseconds timeout, c10d::Store* store) {
  // Exchanging host identities is part of the rendezvous: its own timeout.
  HostLookup hosts(world, env, *resolve(options, env).rendezvous_timeout, store);
  std::string chosen = name;
  if (chosen == "auto") {
    chosen = "gloo";
#if defined(GRADWIRE_WITH_NCCL)
    if (torch::cuda::is_available()) chosen = "nccl";
#endif
    if (chosen == "gloo" && hosts.available()) chosen = choose_cpu_backend(hosts.layout());
  }
  if (chosen == "gloo") return gloo_traits(world, options, env, timeout);
  if (chosen == "shm") {
    require_one_host(world, hosts);
    return shm_traits(world, options, env, timeout);
  }
  if (chosen == "hierarchical") return hierarchical_traits(world, options, env, timeout);
#if defined(GRADWIRE_WITH_NCCL)
  if (chosen == "nccl") return nccl_traits(timeout);
#endif
  throw_unknown_backend(chosen, false);
}

}  // namespace

void check_backend_name(const InitOptions& given, const EnvMap& env) {
  const std::string chosen = *resolve(given, env).backend;
  if (chosen == "auto") return;
  for (const auto& b : available_backends()) {
    if (b == chosen) return;
  }
  throw_unknown_backend(chosen, !given.backend);
}

BackendTraits backend_traits(const std::string& name, const WorldInfo& world,
                             const InitOptions& options, const EnvMap& env,
                             std::chrono::milliseconds timeout) {
  return choose_traits(name, world, options, env, timeout, nullptr);
}

BackendTraits backend_traits(const std::string& name, const WorldInfo& world,
                             const InitOptions& options, const EnvMap& env,
                             std::chrono::milliseconds timeout, c10d::Store& store) {
  return choose_traits(name, world, options, env, timeout, &store);
}

}  // namespace gradwire
