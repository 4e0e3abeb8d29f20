// The communicators of a benchmark that measures several backends in one run (gradwire-bench
// collectives/ddp --backend gloo,shm): the run's own world serves the first backend, and each
// further backend gets a World of its own, joined through a rendezvous on a port that rank 0 picks
// and broadcasts over the first world. All of them stay alive until the run ends, so the backends
// can be measured alternately (repeats) and the first world keeps coordinating.
//
// Header only. Collective over every rank of the run's world; blocks until
// each further world is joined (the run's timeout). Throws what gradwire::init throws.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gradwire/comm/world.h"
#include "gradwire/launch/launcher.h"
#include "harness/host_collectives.h"
#include "harness/ranks.h"

namespace gradwire::bench {

struct BackendWorld {
  std::string backend;                         // as asked for, e.g. "shm" or "auto"
  std::unique_ptr<World> owned;                // null for the run's own world
  std::shared_ptr<Communicator> communicator;  // its world communicator
};

// backends[0] must be the backend the run's world was built with (RankOptions::backend).
inline std::vector<BackendWorld> join_backend_worlds(
    RankContext& context, const std::vector<std::string>& backends,
    std::optional<std::chrono::milliseconds> timeout) {
  std::vector<BackendWorld> worlds;
  auto first = context.world.communicator();
  worlds.push_back({backends.at(0), nullptr, first});
  for (std::size_t i = 1; i < backends.size(); ++i) {
    at::Tensor port = at::zeros({1}, at::kLong);
    if (first->rank() == 0) port.fill_(static_cast<int64_t>(launch::pick_free_port()));
    port = host_broadcast(*first, port, 0);
    InitOptions options;
    options.backend = backends[i];
    options.timeout = timeout;
    options.master_port = static_cast<int>(port.item<int64_t>());
    auto world = init(options);
    // init may apply its own thread default; the benchmark's choice wins (as in run_on_ranks).
    at::set_num_threads(context.threads_per_rank);
    auto communicator = world->communicator();
    worlds.push_back({backends[i], std::move(world), std::move(communicator)});
  }
  return worlds;
}

}  // namespace gradwire::bench
