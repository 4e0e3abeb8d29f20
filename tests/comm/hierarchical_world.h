// Test support: ranks as threads of one process on different simulated hosts (GRADWIRE_HOST_ID
// per rank), their worlds built by connect_world() (connect_world.h) from an explicit EnvMap, so
// that "auto" sees the hosts.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gradwire/comm/world.h"
#include "gradwire/common/env.h"

namespace gradwire::testing {

// Runs fn(rank, world) on hosts.size() threads, rank r with GRADWIRE_HOST_ID = hosts[r], on
// `backend` over loopback (testing::loopback_options; nullopt: GRADWIRE_BACKEND of `extra_env`,
// else auto). Exceptions from a rank are rethrown on the caller's thread after every rank
// finished. `extra_env` is every rank's environment besides.
void run_ranks_on_hosts(const std::optional<std::string>& backend, const std::vector<std::string>& hosts,
                        const std::function<void(int rank, World& world)>& fn,
                        std::chrono::milliseconds timeout = std::chrono::seconds(30),
                        const std::map<std::string, std::string>& extra_env = {});

}  // namespace gradwire::testing
