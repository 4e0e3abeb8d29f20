// Which ranks share a host: each rank's host identity, exchanged through the rendezvous store,
// and the layout derived from it (hosts, their members and leaders). Backend selection ("auto")
// and the hierarchical backend use it; the identity is never guessed from LOCAL_WORLD_SIZE.
//
// The identity itself is common's local_host_identity (gradwire/common/host_identity.h).
#pragma once

#include <chrono>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "gradwire/common/env.h"
#include "gradwire/common/host_identity.h"

namespace gradwire {

// Every one of `size` ranks writes its identity under `key_prefix`/<rank> and waits for all
// others; returns the identities by rank. Blocks. TimeoutError naming the ranks that published
// none within `timeout`.
std::vector<std::string> exchange_host_identities(c10d::Store& store, const std::string& key_prefix,
                                                  int rank, int size, const std::string& identity,
                                                  std::chrono::milliseconds timeout);

// Which ranks run on which host. Pure value.
struct HostLayout {
  std::vector<std::string> hosts;         // distinct identities, in order of their lowest rank
  std::vector<int> host_of_rank;          // rank -> index into hosts
  std::vector<std::vector<int>> members;  // per host: its ranks, ascending

  int rank_count() const { return static_cast<int>(host_of_rank.size()); }
  int host_count() const { return static_cast<int>(hosts.size()); }
  // The lowest rank of a host: the one that talks to the other hosts.
  int leader(int host) const { return members.at(host).front(); }
  // Leaders of every host, in host order (ascending ranks).
  std::vector<int> leaders() const;
  // Position of `rank` among the members of its host (0 for the leader).
  int local_index(int rank) const;
  bool single_host() const { return host_count() == 1; }
  bool one_rank_per_host() const { return host_count() == rank_count(); }
  // "host 'a': ranks [0, 1]; host 'b': ranks [2, 3]"
  std::string describe() const;
};

// Pure. Precondition: identities non-empty.
HostLayout plan_host_layout(const std::vector<std::string>& identities);

// Pure: the CPU backend "auto" takes for a layout: "shm" when every rank shares one host, "gloo"
// when no two ranks do, "hierarchical" otherwise.
std::string choose_cpu_backend(const HostLayout& layout);

}  // namespace gradwire
