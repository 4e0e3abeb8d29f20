// The part of init() that does not depend on the process: builds a World from explicit options
// and an explicit environment. init() adds what is about the process (the world-of-one notice,
// the intra-op thread count) and reads the process environment; tests call this directly, so
// that threads of one process can be ranks with different environments (simulated hosts).
#pragma once

#include <memory>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "gradwire/comm/world.h"
#include "gradwire/common/env.h"

namespace gradwire {

// Blocks like init(): resolves the world from `options` and `env`, refuses an unknown backend
// name, connects the store (in process for a world of one, else rank 0 hosts a TCPStore), joins
// the peers, resolves options.backend with the store, builds the world communicator, and when
// this process records a timeline puts its clock on rank 0's (Note [timeline clocks] in
// world.cpp). Throws the errors init() documents. Thread safe: touches no process-wide state but
// the timeline's clock offset.
std::unique_ptr<World> connect_world(const InitOptions& options, const EnvMap& env);

// The same on a store that is already connected (an elastic generation's prefix of the job
// store): `info` is taken as given (rank, world size, local rank and size); its master address
// and port are not used. Every member of `info` must call it on the same store, whose keys must
// be fresh (a new PrefixStore per world).
std::unique_ptr<World> connect_world_on_store(c10::intrusive_ptr<c10d::Store> store,
                                              WorldInfo info, const InitOptions& options,
                                              const EnvMap& env);

}  // namespace gradwire
