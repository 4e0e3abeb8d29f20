// Routing row ids to the servers that own them (the rule in include/gradwire/ps/table.h) and
// putting the answers back in the caller's order. Pure, thread safe, ATen ops only.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gradwire::ps {

// The ids one server receives, in input order, and their positions in the routed input.
struct RoutedIds {
  int server = 0;
  std::vector<int64_t> ids;
  std::vector<int64_t> positions;
};

// Splits contiguous int64 `ids` (any shape, read flat) by owner (owner_of in
// gradwire/ps/table.h); servers owning none of them are left out. A raw loop: a batch has a few
// dozen ids (Note [raw loops] in client.cpp).
std::vector<RoutedIds> route_ids(const at::Tensor& ids, int num_servers);

// The same shares cut so that none holds more than `max_ids` ids (>= 1): a share above it becomes
// several of the same server, each a consecutive run of its ids and positions, in order. Requests
// are bounded (docs/ps.md "Limits"), so large lookups and pushes go as several calls.
std::vector<RoutedIds> split_shares(std::vector<RoutedIds> shares, int64_t max_ids);

// Unique ids (ascending) and, for every input id, the index of its unique id.
struct UniqueIds {
  at::Tensor ids;
  at::Tensor inverse;
};
UniqueIds unique_ids(const at::Tensor& ids);

// Checks ids are int64 (any shape) and in [0, num_rows), by a raw loop when they are contiguous;
// InvalidArgument naming the first bad one and `what` ("lookup of table 'emb'").
void check_ids(const at::Tensor& ids, int64_t num_rows, const char* what_prefix,
               const std::string& table);

}  // namespace gradwire::ps
