// SharedCounter over the job's rendezvous store (the c10d TCPStore that rank 0 hosts at
// MASTER_ADDR:MASTER_PORT while its gradwire::World lives), or over the job store of an elastic
// job (gradwire::JobStore, gradwire/comm/job_store.h: the store gradwire-run --elastic hosts,
// which outlives every generation). With the sharded reader's elastic hooks, the only parts of
// the data layer that depend on comm.
#pragma once

#include <chrono>
#include <memory>

#include "gradwire/common/env.h"
#include "gradwire/data/shared_counter.h"

namespace gradwire {
struct WorldInfo;
class JobStore;
}  // namespace gradwire

namespace gradwire::data {

// Opens a client connection of this process to the job's store at world.master_addr:
// world.master_port (rank 0 included: its World hosts the store, this is a second connection).
// The World must stay alive as long as the counter is used on rank 0. Blocks until connected;
// throws TimeoutError naming the address after `timeout`. Each add() is one store round trip,
// bounded by `timeout`; the returned counter is thread safe. A world of one (which hosts no store)
// gets make_local_counter() instead, at once.
std::shared_ptr<SharedCounter> connect_store_counter(const WorldInfo& world,
                                                     std::chrono::milliseconds timeout);

// Counters in `store` (shared: the counter keeps it alive). Each add() is one round trip, bounded
// by the store's timeout; a failure throws BackendError naming the key. Thread safe (the store
// serialises its calls).
std::shared_ptr<SharedCounter> job_store_counter(std::shared_ptr<JobStore> store);

// Counters in the job store at MASTER_ADDR:MASTER_PORT of `env` (gradwire-run --elastic sets
// them for its workers): a connection of its own, made within `timeout` (TimeoutError naming the
// address), whose round trips `timeout` bounds too. ConfigError when the variables are unset.
std::shared_ptr<SharedCounter> connect_job_store_counter(
    std::chrono::milliseconds timeout, const EnvMap& env = EnvMap::from_process());

}  // namespace gradwire::data
