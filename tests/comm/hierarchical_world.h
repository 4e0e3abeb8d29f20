// Test support: a World built the way init() builds it once the backend is chosen with the
// rendezvous store at hand (backends.h, the overload taking a store), from an explicit EnvMap.
// Threads of one process can so be ranks on different simulated hosts (GRADWIRE_HOST_ID per
// rank), and "auto" sees the hosts.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gradwire/comm/world.h"
#include "gradwire/common/env.h"

namespace gradwire::testing {

// Blocks like init(): resolves the world from `options` and `env`, connects the store, joins
// the peers, resolves options.backend with the store, builds the world communicator.
std::unique_ptr<World> init_with_env(const InitOptions& options, const EnvMap& env);

// Runs fn(rank, world) on hosts.size() threads, rank r with GRADWIRE_HOST_ID = hosts[r], on
// `backend` over loopback (testing::loopback_options). Exceptions from a rank are rethrown on
// the caller's thread after every rank finished. `extra_env` is every rank's environment besides.
void run_ranks_on_hosts(const std::string& backend, const std::vector<std::string>& hosts,
                        const std::function<void(int rank, World& world)>& fn,
                        std::chrono::milliseconds timeout = std::chrono::seconds(30),
                        const std::map<std::string, std::string>& extra_env = {});

}  // namespace gradwire::testing
