// Routing row ids to the servers that own them (the rule in include/gradwire/ps/table.h) and
// putting the answers back in the caller's order. Pure, thread safe, ATen ops only.
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace gradwire::ps {

// The ids each server receives, and where its answer rows go.
struct ServerShare {
  int server = 0;
  at::Tensor ids;        // int64, 1-D: the ids this server owns, in input order
  at::Tensor positions;  // int64, 1-D: their positions in the routed input
};

// Splits `ids` (int64, 1-D) by owner; servers owning none of them are left out.
std::vector<ServerShare> route_ids(const at::Tensor& ids, int num_servers);

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
