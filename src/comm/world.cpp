// init(): environment -> WorldInfo -> store -> world communicator.
#include "gradwire/comm/world.h"

#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>

#include <atomic>
#include <iostream>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "comm/backends.h"
#include "comm/connect_world.h"
#include "comm/core/c10d_adapter.h"
#include "comm/core/rendezvous.h"
#include "gradwire/common/error.h"
#include "gradwire/common/host_identity.h"
#include "gradwire/common/timeline.h"

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

// Prints world_of_one_notice() the first time a process makes a world without a launcher. The
// only process-wide state in comm: a notice is about the process, not about one World.
void announce_world_of_one() {
  static std::atomic<bool> announced{false};
  if (!announced.exchange(true)) std::cerr << world_of_one_notice() << std::endl;
}

// A world of one needs no peers: an in-process store, so no port is opened (none can collide)
// and nothing waits for a connection. Otherwise rank 0 hosts the TCPStore, the others connect.
c10::intrusive_ptr<c10d::Store> make_store(const WorldInfo& info,
                                           std::chrono::milliseconds timeout) {
  if (info.world_size == 1) {
    auto store = c10::make_intrusive<c10d::HashStore>();
    store->setTimeout(timeout);
    return store;
  }
  return connect_store(info, timeout);
}

// The job's store as the timeline's clock measurement needs it.
class TimelineClockStore : public timeline::ClockStore {
 public:
  explicit TimelineClockStore(c10d::Store& store) : store_(store) {}
  void set(const std::string& key, const std::string& value) override {
    store_.set(key, std::vector<uint8_t>(value.begin(), value.end()));
  }
  std::string get(const std::string& key) override {
    const std::vector<uint8_t> value = store_.get(key);
    return std::string(value.begin(), value.end());
  }

 private:
  c10d::Store& store_;
};

// Note [timeline clocks]: init() starts the rank's timeline (GRADWIRE_TIMELINE, docs/timeline.md)
// before the rendezvous, and afterwards puts its clock on rank 0's, so that merged traces of
// several hosts line up. Every rank says whether it records, and on which kernel it runs
// ("<hostname>/<boot id>", not GRADWIRE_HOST_ID: a simulated host still shares the clocks). Ranks
// on rank 0's kernel keep their start-time offsets (wall clock minus steady clock: exact between
// processes of one kernel); the others measure theirs through the store (a collective with rank 0
// answering). It runs only when all ranks record, so a variable set on some ranks only costs
// nothing but the one flag each, and no rank waits for one that does not take part.
void align_timeline_clock(c10d::Store& store, const WorldInfo& info) {
  if (info.world_size == 1) return;
  const std::string prefix = "gradwire/timeline/";
  const std::string mine = timeline::running() ? "1" + local_host_identity(EnvMap()) : "0";
  store.set(prefix + "records/" + std::to_string(info.rank),
            std::vector<uint8_t>(mine.begin(), mine.end()));
  if (!timeline::running()) return;
  std::vector<std::string> kernels;
  for (int r = 0; r < info.world_size; ++r) {
    const std::vector<uint8_t> records = store.get(prefix + "records/" + std::to_string(r));
    if (records.empty() || records[0] != '1') return;  // keeps the wall-clock offset
    kernels.emplace_back(records.begin() + 1, records.end());
  }
  const std::vector<int> measured = timeline::ranks_to_measure(kernels);
  if (info.rank != 0 && kernels[static_cast<size_t>(info.rank)] == kernels[0] &&
      !kernels[0].empty()) {
    timeline::set_clock_offset({timeline::clock_offset_ns(), 0}, "rank 0's kernel: wall clock");
  }
  if (measured.empty()) return;
  TimelineClockStore clocks(store);
  timeline::sync_clock_through_store(clocks, prefix + "clock", info.rank, measured);
}

}  // namespace

std::string world_of_one_notice() {
  return "gradwire: no launcher environment found (RANK/WORLD_SIZE, OMPI_COMM_WORLD_*, or an srun "
         "step's SLURM_PROCID/SLURM_STEP_ID); running as a world of one. To run N processes, "
         "start it with gradwire-run -n N PROGRAM [ARGS...].";
}

std::unique_ptr<World> connect_world(const InitOptions& options, const EnvMap& env) {
  WorldInfo info = resolve_world(options, env);
  check_backend_name(options, env);
  auto store = make_store(info, *resolve(options, env).rendezvous_timeout);
  auto world = connect_world_on_store(store, std::move(info), options, env);
  align_timeline_clock(*store, world->info());
  return world;
}

std::unique_ptr<World> connect_world_on_store(c10::intrusive_ptr<c10d::Store> store, WorldInfo info,
                                              const InitOptions& options, const EnvMap& env) {
  check_backend_name(options, env);
  const InitOptions resolved = resolve(options, env);
  const auto timeout = *resolved.timeout;
  const auto rendezvous_timeout = *resolved.rendezvous_timeout;
  auto shared = std::make_shared<CommunicatorShared>();
  shared->timeout = timeout;
  shared->store = std::move(store);

  std::vector<int> everyone(info.world_size);
  for (int r = 0; r < info.world_size; ++r) everyone[r] = r;
  // Exchange who is who first, so later failures can name dead ranks.
  auto peers = join_members(*shared->store, "gradwire/peers", info.rank, info.world_size,
                            rendezvous_timeout, everyone);
  shared->peers = std::make_shared<PeerTable>(std::move(peers));
  // "auto" looks at which ranks share a host (host identities exchanged through the store).
  shared->traits = backend_traits(*resolved.backend, info, resolved, env, timeout, *shared->store);
  if (shared->traits.stream_ordered_wait) shared->unfinished = std::make_shared<UnfinishedWorks>();
  auto communicator =
      std::make_shared<C10dCommunicator>(shared, "gradwire/world", info.rank, everyone);
  return std::make_unique<WorldImpl>(std::move(info), std::move(communicator));
}

std::unique_ptr<World> init(const InitOptions& options) {
  const EnvMap env = EnvMap::from_process();
  const WorldInfo info = resolve_world(options, env);
  if (info.flavour == EnvFlavour::kNone) announce_world_of_one();
  if (!timeline::running()) timeline::start_from_env(env, "rank " + std::to_string(info.rank));
  // A restarted rank (the launcher's --max-restarts) marks where its incarnation begins.
  if (timeline::enabled()) {
    const long incarnation = env.get_int("TORCHELASTIC_RESTART_COUNT").value_or(0);
    if (incarnation > 0) timeline::instant("restart", "launch", {{"incarnation", incarnation}});
  }
  const InitOptions resolved = resolve(options, env);  // bad timeouts before a bad thread count
  at::set_num_threads(
      resolve_threads(options, env, info, static_cast<int>(std::thread::hardware_concurrency())));
  try {
    return connect_world(options, env);
  } catch (const TimeoutError& error) {
    // The rendezvous (the store, or every rank's join) timed out: mark it, and write it out
    // before the error ends the process.
    if (timeline::enabled()) {
      timeline::instant("timeout", "launch",
                        {{"waited_for", "the rendezvous (rank 0's store and every rank)"},
                         {"timeout_ms", static_cast<int64_t>(resolved.rendezvous_timeout->count())},
                         {"error", error.what()}});
      timeline::flush();
    }
    throw;
  }
}

std::string torch_version() { return c10d_adapter::torch_version_string(); }

std::string torch_cuda_version() {
  const auto& hooks = at::detail::getCUDAHooks();
  if (!hooks.hasCUDART()) return "";
  const long version = hooks.versionCUDART();  // 1000 * major + 10 * minor
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

void set_cuda_device(int index) {
  const int visible =
      torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  if (index < 0 || index >= visible) {
    throw InvalidArgument("set_cuda_device(" + std::to_string(index) + "): " +
                          (torch_cuda_version().empty()
                               ? "libtorch " + torch_version() + " was built without CUDA"
                               : std::to_string(visible) + " GPU(s) visible") +
                          "; check CUDA_VISIBLE_DEVICES and the workers per node");
  }
  c10::impl::getDeviceGuardImpl(c10::kCUDA)
      ->setDevice(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index)));
}

std::string torch_description() {
  const std::string cuda = torch_cuda_version();
  return torch_version() + (cuda.empty() ? " (CPU only)" : " (CUDA " + cuda + ")");
}

}  // namespace gradwire
