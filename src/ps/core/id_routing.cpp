#include "ps/core/id_routing.h"

#include <algorithm>
#include <string>

#include "gradwire/common/error.h"
#include "gradwire/ps/table.h"

namespace gradwire::ps {

std::vector<RoutedIds> route_ids(const at::Tensor& ids, int num_servers) {
  GRADWIRE_CHECK(ids.scalar_type() == at::kLong && ids.is_contiguous());
  std::vector<RoutedIds> by_server(static_cast<size_t>(num_servers));
  const int64_t* data = ids.data_ptr<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    RoutedIds& share = by_server[static_cast<size_t>(owner_of(data[i], num_servers))];
    share.ids.push_back(data[i]);
    share.positions.push_back(i);
  }
  std::vector<RoutedIds> routed;
  for (int server = 0; server < num_servers; ++server) {
    RoutedIds& share = by_server[static_cast<size_t>(server)];
    if (share.ids.empty()) continue;
    share.server = server;
    routed.push_back(std::move(share));
  }
  return routed;
}

std::vector<RoutedIds> split_shares(std::vector<RoutedIds> shares, int64_t max_ids) {
  GRADWIRE_CHECK(max_ids >= 1);
  std::vector<RoutedIds> out;
  for (RoutedIds& share : shares) {
    const auto count = static_cast<int64_t>(share.ids.size());
    if (count <= max_ids) {
      out.push_back(std::move(share));
      continue;
    }
    for (int64_t first = 0; first < count; first += max_ids) {
      const int64_t last = std::min(count, first + max_ids);
      RoutedIds part;
      part.server = share.server;
      part.ids.assign(share.ids.begin() + first, share.ids.begin() + last);
      part.positions.assign(share.positions.begin() + first, share.positions.begin() + last);
      out.push_back(std::move(part));
    }
  }
  return out;
}

UniqueIds unique_ids(const at::Tensor& ids) {
  auto [unique, inverse, counts] =
      at::_unique2(ids.reshape({-1}), /*sorted=*/true, /*return_inverse=*/true);
  (void)counts;
  return {unique, inverse.view(ids.sizes())};
}

void check_ids(const at::Tensor& ids, int64_t num_rows, const char* what_prefix,
               const std::string& table) {
  // A raw loop first: a batch has a few dozen ids (Note [raw loops] in client.cpp); the ATen
  // path below only runs to name a bad id.
  if (ids.scalar_type() == at::kLong && ids.is_contiguous()) {
    const int64_t* data = ids.data_ptr<int64_t>();
    bool bad = false;
    for (int64_t i = 0; i < ids.numel(); ++i) bad |= data[i] < 0 || data[i] >= num_rows;
    if (!bad) return;
  }
  const std::string what = std::string(what_prefix) + " table '" + table + "'";
  if (ids.scalar_type() != at::kLong) {
    throw InvalidArgument("gradwire: " + what + ": ids must be int64, got " +
                          std::string(c10::toString(ids.scalar_type())));
  }
  if (ids.numel() == 0) return;
  const at::Tensor flat = ids.reshape({-1});
  const at::Tensor bad = ((flat < 0) | (flat >= num_rows)).nonzero();
  if (bad.numel() > 0) {
    const int64_t position = bad[0][0].item<int64_t>();
    throw InvalidArgument("gradwire: " + what + ": id " +
                          std::to_string(flat[position].item<int64_t>()) + " at position " +
                          std::to_string(position) + " is out of range [0, " +
                          std::to_string(num_rows) + ")");
  }
}

}  // namespace gradwire::ps
