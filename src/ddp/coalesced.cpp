#include "coalesced.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <map>
#include <string>
#include <utility>

namespace gradwire::ddp {

void broadcast_coalesced(Communicator& comm, const std::vector<at::Tensor>& tensors, int root) {
  if (comm.size() < 2 || tensors.empty()) return;
  at::NoGradGuard no_grad;
  // Groups keep first-appearance order, identical on every rank.
  std::vector<std::vector<at::Tensor>> groups;
  std::map<std::pair<at::ScalarType, std::string>, size_t> group_of;
  for (const auto& t : tensors) {
    auto key = std::make_pair(t.scalar_type(), t.device().str());
    auto [it, inserted] = group_of.emplace(key, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(t);
  }
  for (auto& group : groups) {
    std::vector<at::Tensor> flat_parts;
    flat_parts.reserve(group.size());
    for (const auto& t : group) flat_parts.push_back(t.detach().reshape({-1}));
    at::Tensor flat = at::cat(flat_parts);
    comm.broadcast(flat, root)->wait();
    int64_t offset = 0;
    for (auto& t : group) {
      int64_t n = t.numel();
      t.detach().copy_(flat.narrow(0, offset, n).view(t.sizes()));
      offset += n;
    }
  }
}

}  // namespace gradwire::ddp
