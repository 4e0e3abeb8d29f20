// Rendezvous through libtorch's c10d TCPStore: rank 0 hosts the store at MASTER_ADDR:MASTER_PORT,
// every rank announces itself and waits for all others, with a timeout that names the absentees.
#pragma once

#include <chrono>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "gradwire/comm/world.h"
#include "comm/diagnostics/peer_table.h"

namespace gradwire {

// Connects to (or, on rank 0, hosts) the store. Throws TimeoutError naming the address when the
// store cannot be reached in time and ConfigError when rank 0 cannot listen on the port.
c10::intrusive_ptr<c10d::Store> connect_store(const WorldInfo& world,
                                              std::chrono::milliseconds timeout);

// Every member writes its PeerInfo under `prefix`/join/<member index> and waits for all `size`
// members. Returns the members' PeerInfo by index. Throws TimeoutError naming the members that
// never joined (as `member_names[i]`, e.g. world ranks) and the time waited.
std::vector<PeerInfo> join_members(c10d::Store& store, const std::string& prefix, int index,
                                   int size, std::chrono::milliseconds timeout,
                                   const std::vector<int>& member_world_ranks);

}  // namespace gradwire
