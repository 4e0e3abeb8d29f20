#include "comm/diagnostics/peer_table.h"

#include <unistd.h>

#include <cerrno>
#include <sstream>

#include "common/process.h"
#include "gradwire/common/error.h"

namespace gradwire {

std::string encode_peer(const PeerInfo& peer) { return peer.host + " " + std::to_string(peer.pid); }

PeerInfo decode_peer(const std::string& text) {
  std::istringstream in(text);
  PeerInfo peer;
  if (!(in >> peer.host >> peer.pid)) {
    throw BackendError("gradwire: malformed peer record '" + text +
                       "' in the rendezvous store; is another job using the same MASTER_PORT?");
  }
  return peer;
}

PeerInfo self_peer() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return PeerInfo{name, static_cast<int>(getpid())};
}

std::vector<int> PeerTable::dead_local_ranks(const std::vector<int>& world_ranks) const {
  const std::string my_host = self_peer().host;
  std::vector<int> dead;
  for (int rank : world_ranks) {
    if (rank < 0 || rank >= static_cast<int>(peers_.size())) continue;
    const auto& peer = peers_[rank];
    if (peer.host == my_host && peer.pid > 0 && process_gone(peer.pid)) dead.push_back(rank);
  }
  return dead;
}

std::string PeerTable::describe(int world_rank) const {
  std::string text = "rank " + std::to_string(world_rank);
  if (world_rank >= 0 && world_rank < static_cast<int>(peers_.size())) {
    text +=
        " (pid " + std::to_string(peers_[world_rank].pid) + " on " + peers_[world_rank].host + ")";
  }
  return text;
}

}  // namespace gradwire
