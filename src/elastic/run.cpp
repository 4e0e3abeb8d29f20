#include <unistd.h>

#include <iostream>
#include <set>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "binding.h"
#include "common/wait_interrupt.h"
#include "comm/connect_world.h"
#include "comm/job_store_impl.h"
#include "gradwire/common/env.h"
#include "gradwire/common/error.h"
#include "gradwire/common/host_identity.h"
#include "gradwire/common/settings.h"
#include "gradwire/common/timeline.h"
#include "gradwire/elastic/elastic.h"
#include "membership.h"

namespace gradwire::elastic {
namespace {

int env_int(const EnvMap& env, const std::string& name, int fallback) {
  const std::optional<long> value = env.get_int(name);
  return value ? static_cast<int>(*value) : fallback;
}

detail::MembershipOptions membership_options(const RunOptions& options, const EnvMap& env) {
  detail::MembershipOptions resolved;
  resolved.worker_id = options.worker_id;
  if (resolved.worker_id.empty()) resolved.worker_id = env.get(settings::kElasticId.name).value_or("");
  if (resolved.worker_id.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    resolved.worker_id = std::string(host) + "-" + std::to_string(::getpid()) + ".0.0";
  }
  resolved.host = local_host_identity(env);
  resolved.min_workers = options.min_workers.value_or(env_int(env, settings::kElasticMin.name, 1));
  resolved.max_workers =
      options.max_workers.value_or(env_int(env, settings::kElasticMax.name, 1 << 30));
  resolved.initial_workers = options.initial_workers.value_or(
      env_int(env, settings::kElasticInitial.name, env_int(env, "WORLD_SIZE", resolved.min_workers)));
  if (resolved.min_workers < 1 || resolved.max_workers < resolved.min_workers) {
    throw ConfigError("gradwire elastic: needs 1 <= min workers (" +
                      std::to_string(resolved.min_workers) + ") <= max workers (" +
                      std::to_string(resolved.max_workers) + ")");
  }
  resolved.timeout = *resolve(options.init, env).rendezvous_timeout;
  resolved.agent_silence = options.agent_silence;
  resolved.verbose = options.verbose;
  return resolved;
}

std::unique_ptr<JobStore> connect_job_store(const EnvMap& env, std::chrono::milliseconds timeout) {
  const std::optional<std::string> address = env.get("MASTER_ADDR");
  const std::optional<long> port = env.get_int("MASTER_PORT");
  if (!address || !port) {
    throw ConfigError(
        "gradwire elastic: MASTER_ADDR and MASTER_PORT must name the job store; start the "
        "workers with gradwire-run --elastic (or pass RunOptions::store)");
  }
  return JobStore::connect(*address, static_cast<int>(*port), timeout);
}

// Throws PeerLostError naming the members of `generation` (other than this worker) that are gone.
void throw_if_members_gone(detail::Membership& membership, const Generation& generation) {
  std::vector<std::string> others;
  for (int rank = 0; rank < generation.size; ++rank) {
    if (rank != generation.rank) others.push_back(generation.members[rank]);
  }
  const std::set<std::string> gone = membership.gone(others);
  if (gone.empty()) return;
  std::string names;
  std::vector<int> ranks;
  for (int rank = 0; rank < generation.size; ++rank) {
    if (gone.count(generation.members[rank]) == 0) continue;
    names += (names.empty() ? "" : ", ") + generation.members[rank] + " (rank " +
             std::to_string(rank) + ")";
    ranks.push_back(rank);
  }
  throw PeerLostError("gradwire: elastic worker " + names + " of generation " +
                          std::to_string(generation.number) +
                          " left (its exit marked by its launcher, or its launcher silent) while "
                          "this worker waited outside a collective",
                      ranks);
}

}  // namespace

// Note [leaving a world]: a generation's world that failed is destroyed before the next
// rendezvous. Its peers may still wait in a collective that will never complete (a hierarchical
// host's local ranks wait for their leader, whose step among the leaders failed): destruction
// closes its Gloo connections and withdraws it from its shm segments, so their waits fail at once
// rather than at the timeout, and they come to the rendezvous too.
void run(State& state, const std::function<void(Context&)>& train, RunOptions options) {
  const EnvMap env = EnvMap::from_process();
  const detail::MembershipOptions resolved = membership_options(options, env);
  // GRADWIRE_TIMELINE (gradwire-run --timeline): a worker's process track is named by its id, which
  // stays while its rank changes from generation to generation (docs/timeline.md).
  if (!timeline::running()) timeline::start_from_env(env, "worker " + resolved.worker_id);
  std::unique_ptr<JobStore> owned;
  JobStore* store = options.store;
  if (store == nullptr) {
    owned = connect_job_store(env, resolved.timeout);
    store = owned.get();
  }
  detail::Membership membership(*store, resolved);
  // A peer died: back to the last commit, then the next generation.
  auto go_back = [&](const Error& error) {
    state.restore();
    timeline::instant("membership change", "elastic",
                      {{"back_to_commit", state.commits()}, {"error", error.what()}},
                      timeline::Scope::kProcess);
    if (options.verbose) {
      std::cerr << "gradwire elastic: " << error.what()
                << "\ngradwire elastic: " << resolved.worker_id << " goes back to commit "
                << state.commits() << " and rendezvous again" << std::endl;
    }
  };
  int64_t number = membership.first_generation();
  for (;;) {
    const std::optional<Generation> joined = membership.join(number, state.commits());
    if (!joined) return;  // the others finished the job first
    const Generation& generation = *joined;
    number = generation.number + 1;
    WorldInfo info;
    info.rank = generation.rank;
    info.world_size = generation.size;
    info.local_rank = generation.local_rank;
    info.local_world_size = generation.local_size;
    info.master_addr = env.get("MASTER_ADDR").value_or("127.0.0.1");
    info.flavour = EnvFlavour::kExplicit;
    // Destroyed when the iteration ends, after the state lets go of it (Note [leaving a world]).
    std::unique_ptr<World> world;
    State::Binding binding;
    // The state checks for joiners through this generation only while it runs.
    struct Unbind {
      State& state;
      ~Unbind() { state.bind(nullptr); }
    } unbind{state};
    try {
      auto prefixed = c10::make_intrusive<c10d::PrefixStore>(
          detail::world_prefix(generation.number), c10d_store_of(*store));
      world = connect_world_on_store(prefixed, info, options.init, env);
      const std::shared_ptr<Communicator> communicator = world->communicator();
      state.sync(*communicator, 0, generation.number);
      timeline::instant("generation", "elastic",
                        {{"generation", generation.number},
                         {"rank", generation.rank},
                         {"world_size", generation.size},
                         {"commit", state.commits()}},
                        timeline::Scope::kProcess);
      Context context(generation, communicator);
      for (const auto& reset : options.on_reset) reset(context);
      binding = State::Binding{&membership, generation.number, communicator.get()};
      state.bind(&binding);
      // Note [interrupted waits]: a wait outside the collectives (a parameter-server step for a
      // trainer that died after its last collective) ends once a member is gone.
      const gradwire::detail::WaitInterrupt interrupt(
          [&] { throw_if_members_gone(membership, generation); });
      train(context);
      if (generation.rank == 0) membership.mark_done(generation.number);
      return;
    } catch (const detail::MembershipChange&) {
      if (options.verbose) {
        std::cerr << "gradwire elastic: workers wait to join; generation " << generation.number
                  << " ends at commit " << state.commits() << std::endl;
      }
    } catch (const PeerLostError& error) {
      go_back(error);
    } catch (const BackendError& error) {
      go_back(error);
    } catch (const TimeoutError& error) {
      go_back(error);
    }
  }
}

}  // namespace gradwire::elastic
