// The registry of communicator backends: a fixed table of name -> traits. Adding a backend means
// adding one entry in backends.cpp.
#pragma once

#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "comm/core/c10d_communicator.h"
#include "gradwire/comm/world.h"

namespace gradwire {

// Names of the backends compiled in ("gloo", "shm", "hierarchical", and "nccl" when built with
// CUDA).
std::vector<std::string> available_backends();

// Returns the traits of the backend `name` names (InitOptions::backend after resolve()). "auto"
// means nccl when compiled in and CUDA is available, else by where the
// ranks run (hierarchical/host_identity.h): "shm" when they all share one host, "gloo" when no two share one,
// "hierarchical" otherwise. The hosts are learnt by exchanging host identities through `store`
// (keys gradwire/hosts/<rank>): every rank must call this with the same name, and it blocks
// until all ranks published theirs (TimeoutError naming the absent ones). "shm" is a ConfigError
// naming the hosts when the ranks span hosts. InvalidArgument for an unknown or unavailable
// name, listing the choices.
BackendTraits backend_traits(const std::string& name, const WorldInfo& world,
                             const InitOptions& options, const EnvMap& env,
                             std::chrono::milliseconds timeout, c10d::Store& store);

// Throws InvalidArgument when `given`'s backend, or GRADWIRE_BACKEND when it is unset, is no
// backend of this build; lets init() refuse a typo before the rendezvous.
void check_backend_name(const InitOptions& given, const EnvMap& env);

// The same before the store is reachable: "auto" cannot see the hosts and means gloo on CPU, and
// "shm" trusts LOCAL_WORLD_SIZE (ConfigError when it differs from WORLD_SIZE). "hierarchical"
// works either way: it learns the hosts when its process group is built.
BackendTraits backend_traits(const std::string& name, const WorldInfo& world,
                             const InitOptions& options, const EnvMap& env,
                             std::chrono::milliseconds timeout);

}  // namespace gradwire
