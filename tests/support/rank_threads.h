// Test support: N ranks of one job as threads of this process (fast unit tests, gloo
// BaseTest::spawn style). Each thread builds its own World on a loopback port picked at run time.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "gradwire/comm/world.h"

namespace gradwire::testing {

// A TCP port on 127.0.0.1 that was free when asked.
int free_port();

// InitOptions for `rank` of a Gloo job on 127.0.0.1:port with the given timeout.
InitOptions loopback_options(int rank, int world_size, int port, std::chrono::milliseconds timeout);

// Runs fn(index) for every index in [0, count), each on its own thread, and joins them all. The
// first exception thrown on any of them is rethrown on the caller's thread after all joined.
void run_threads(int count, const std::function<void(int index)>& fn);

// Runs fn(rank, world) on `world_size` threads (ranks `present` only, when given: the others
// never join) over `backend` (InitOptions::backend). Exceptions from a rank are rethrown on the
// caller's thread after all joined.
void run_ranks(int world_size, const std::function<void(int rank, World& world)>& fn,
               std::chrono::milliseconds timeout = std::chrono::seconds(30),
               std::vector<int> present = {}, const std::string& backend = "gloo");

}  // namespace gradwire::testing
