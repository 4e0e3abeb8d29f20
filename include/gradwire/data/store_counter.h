// SharedCounter over the job's rendezvous store (the c10d TCPStore that rank 0 hosts at
// MASTER_ADDR:MASTER_PORT while its gradwire::World lives). This is the only part of the data
// layer that depends on comm.
#pragma once

#include <chrono>
#include <memory>

#include "gradwire/data/shared_counter.h"

namespace gradwire {
struct WorldInfo;
}

namespace gradwire::data {

// Opens a client connection of this process to the job's store at world.master_addr:
// world.master_port (rank 0 included: its World hosts the store, this is a second connection).
// The World must stay alive as long as the counter is used on rank 0. Blocks until connected;
// throws TimeoutError naming the address after `timeout`. Each add() is one store round trip,
// bounded by `timeout`; the returned counter is thread safe. A world of one (which hosts no store)
// gets make_local_counter() instead, at once.
std::shared_ptr<SharedCounter> connect_store_counter(const WorldInfo& world,
                                                     std::chrono::milliseconds timeout);

}  // namespace gradwire::data
