// The registry of communicator backends: a fixed table of name -> traits. Adding a backend means
// adding one entry in backends.cpp.
#pragma once

#include <string>
#include <vector>

#include "c10d_communicator.h"
#include "gradwire/comm/world.h"

namespace gradwire {

// Names of the backends compiled in ("gloo", "shm", and "nccl" when built with CUDA).
std::vector<std::string> available_backends();

// Resolves "auto" (GRADWIRE_BACKEND when set, else nccl when compiled in and CUDA is available,
// else gloo) and returns the traits of the chosen backend. InvalidArgument for an unknown or
// unavailable name, listing the choices; ConfigError for "shm" when the ranks span hosts
// (local_world_size != world_size).
BackendTraits backend_traits(const std::string& name, const WorldInfo& world,
                             const InitOptions& options, const EnvMap& env,
                             std::chrono::milliseconds timeout);

}  // namespace gradwire
