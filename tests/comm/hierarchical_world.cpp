#include "hierarchical_world.h"

#include "comm/connect_world.h"
#include "support/rank_threads.h"

namespace gradwire::testing {

void run_ranks_on_hosts(const std::optional<std::string>& backend, const std::vector<std::string>& hosts,
                        const std::function<void(int, World&)>& fn,
                        std::chrono::milliseconds timeout,
                        const std::map<std::string, std::string>& extra_env) {
  const int world_size = static_cast<int>(hosts.size());
  const int port = free_port();
  run_threads(world_size, [&](int rank) {
    auto options = loopback_options(rank, world_size, port, timeout);
    options.backend = backend;
    auto env = extra_env;
    env["GRADWIRE_HOST_ID"] = hosts[rank];
    auto world = connect_world(options, EnvMap(env));
    fn(rank, *world);
  });
}

}  // namespace gradwire::testing
