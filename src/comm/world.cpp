// init(): environment -> WorldInfo -> store -> world communicator.
#include "gradwire/comm/world.h"

#include <ATen/Parallel.h>

#include <thread>

#include "backends.h"
#include "c10d_adapter.h"
#include "gradwire/common/error.h"
#include "rendezvous.h"

namespace gradwire {

namespace {

class WorldImpl : public World {
 public:
  WorldImpl(WorldInfo info, std::shared_ptr<Communicator> communicator)
      : info_(std::move(info)), communicator_(std::move(communicator)) {}
  const WorldInfo& info() const override { return info_; }
  std::shared_ptr<Communicator> communicator() const override { return communicator_; }

 private:
  WorldInfo info_;
  std::shared_ptr<Communicator> communicator_;
};

}  // namespace

std::unique_ptr<World> init(const InitOptions& options) {
  const EnvMap env = EnvMap::from_process();
  WorldInfo info = resolve_world(options, env);
  const auto timeout = resolve_timeout(options, env);
  at::set_num_threads(resolve_intra_op_threads(
      options, env, info, static_cast<int>(std::thread::hardware_concurrency())));
  auto shared = std::make_shared<CommunicatorShared>();
  shared->traits = backend_traits(options.backend, info, options, env, timeout);
  shared->timeout = timeout;
  shared->store = connect_store(info, timeout);

  std::vector<int> everyone(info.world_size);
  for (int r = 0; r < info.world_size; ++r) everyone[r] = r;
  // Exchange who is who first, so later failures can name dead ranks.
  auto peers =
      join_members(*shared->store, "gradwire/peers", info.rank, info.world_size, timeout, everyone);
  shared->peers = std::make_shared<PeerTable>(std::move(peers));
  auto communicator =
      std::make_shared<C10dCommunicator>(shared, "gradwire/world", info.rank, everyone);
  return std::make_unique<WorldImpl>(std::move(info), std::move(communicator));
}

std::string torch_version() { return c10d_adapter::torch_version_string(); }

}  // namespace gradwire
