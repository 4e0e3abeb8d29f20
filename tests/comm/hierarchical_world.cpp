#include "hierarchical_world.h"

#include <exception>
#include <mutex>
#include <thread>

#include "backends.h"
#include "c10d_communicator.h"
#include "rendezvous.h"
#include "support/rank_threads.h"

namespace gradwire::testing {

namespace {

class TestWorld : public World {
 public:
  TestWorld(WorldInfo info, std::shared_ptr<Communicator> communicator)
      : info_(std::move(info)), communicator_(std::move(communicator)) {}
  const WorldInfo& info() const override { return info_; }
  std::shared_ptr<Communicator> communicator() const override { return communicator_; }

 private:
  WorldInfo info_;
  std::shared_ptr<Communicator> communicator_;
};

}  // namespace

std::unique_ptr<World> init_with_env(const InitOptions& options, const EnvMap& env) {
  WorldInfo info = resolve_world(options, env);
  const auto timeout = resolve_timeout(options, env);
  auto shared = std::make_shared<CommunicatorShared>();
  shared->timeout = timeout;
  shared->store = connect_store(info, timeout);
  std::vector<int> everyone(info.world_size);
  for (int r = 0; r < info.world_size; ++r) everyone[r] = r;
  shared->peers = std::make_shared<PeerTable>(join_members(
      *shared->store, "gradwire/peers", info.rank, info.world_size, timeout, everyone));
  shared->traits = backend_traits(options.backend, info, options, env, timeout, *shared->store);
  auto communicator =
      std::make_shared<C10dCommunicator>(shared, "gradwire/world", info.rank, everyone);
  return std::make_unique<TestWorld>(std::move(info), std::move(communicator));
}

void run_ranks_on_hosts(const std::string& backend, const std::vector<std::string>& hosts,
                        const std::function<void(int, World&)>& fn,
                        std::chrono::milliseconds timeout,
                        const std::map<std::string, std::string>& extra_env) {
  const int world_size = static_cast<int>(hosts.size());
  const int port = free_port();
  std::mutex mutex;
  std::exception_ptr first_error;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        auto options = loopback_options(rank, world_size, port, timeout);
        options.backend = backend;
        auto env = extra_env;
        env["GRADWIRE_HOST_ID"] = hosts[rank];
        auto world = init_with_env(options, EnvMap(env));
        fn(rank, *world);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!first_error) first_error = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace gradwire::testing
