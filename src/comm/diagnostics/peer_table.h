// Who each world rank is (host and pid), exchanged at rendezvous, so that a failed operation can
// say which peers are gone instead of only "connection closed".
#pragma once

#include <string>
#include <vector>

namespace gradwire {

struct PeerInfo {
  std::string host;
  int pid = 0;
};

// "host pid" <-> PeerInfo (the value written to the store at join).
std::string encode_peer(const PeerInfo& peer);
PeerInfo decode_peer(const std::string& text);

// This process's PeerInfo.
PeerInfo self_peer();

class PeerTable {
 public:
  PeerTable() = default;
  explicit PeerTable(std::vector<PeerInfo> peers) : peers_(std::move(peers)) {}

  // Of the given world ranks, those whose process runs on this host and has exited (gone or a
  // zombie). Remote peers cannot be checked and are never listed.
  std::vector<int> dead_local_ranks(const std::vector<int>& world_ranks) const;
  // "rank 2 (pid 123 on host)".
  std::string describe(int world_rank) const;

 private:
  std::vector<PeerInfo> peers_;
};

}  // namespace gradwire
