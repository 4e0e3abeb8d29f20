#include "comm/hierarchical/host_identity.h"

#include <algorithm>
#include <map>

#include "comm/core/op_context.h"
#include "gradwire/common/error.h"

namespace gradwire {

namespace {

std::string key_of(const std::string& key_prefix, int rank) {
  return key_prefix + "/" + std::to_string(rank);
}

}  // namespace

std::vector<std::string> exchange_host_identities(c10d::Store& store, const std::string& key_prefix,
                                                  int rank, int size, const std::string& identity,
                                                  std::chrono::milliseconds timeout) {
  GRADWIRE_CHECK(rank >= 0 && rank < size);
  store.set(key_of(key_prefix, rank), std::vector<uint8_t>(identity.begin(), identity.end()));
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(key_of(key_prefix, r));
  try {
    store.wait(keys, timeout);
  } catch (const std::exception& e) {
    std::vector<int> missing;
    for (int r = 0; r < size; ++r) {
      if (!store.check({keys[r]})) missing.push_back(r);
    }
    throw TimeoutError("gradwire: rank(s) " + format_ranks(missing) + " of " +
                       std::to_string(size) + " did not publish their host identity under '" +
                       key_prefix + "' within " + format_duration(timeout) +
                       "; check that they are running and use the same MASTER_ADDR and "
                       "MASTER_PORT. Store said: " +
                       std::string(e.what()).substr(0, std::string(e.what()).find('\n')));
  }
  std::vector<std::string> identities;
  for (const auto& key : keys) {
    const auto bytes = store.get(key);
    identities.emplace_back(bytes.begin(), bytes.end());
  }
  // Every rank has read every identity before any returns: a rank that then fails on the layout
  // (shm across hosts) and takes the store down with it (rank 0 hosts it) must not cut off a
  // rank still reading, which would see "Broken pipe" instead of the same clear error.
  store.set(key_of(key_prefix + "/read", rank), std::vector<uint8_t>{1});
  std::vector<std::string> read_keys;
  for (int r = 0; r < size; ++r) read_keys.push_back(key_of(key_prefix + "/read", r));
  store.wait(read_keys, timeout);
  return identities;
}

std::vector<int> HostLayout::leaders() const {
  std::vector<int> result;
  for (int h = 0; h < host_count(); ++h) result.push_back(leader(h));
  return result;
}

int HostLayout::local_index(int rank) const {
  const auto& mine = members.at(host_of_rank.at(rank));
  return static_cast<int>(std::find(mine.begin(), mine.end(), rank) - mine.begin());
}

std::string HostLayout::describe() const {
  std::string text;
  for (int h = 0; h < host_count(); ++h) {
    text +=
        (h ? "; " : "") + std::string("host '") + hosts[h] + "': ranks " + format_ranks(members[h]);
  }
  return text;
}

HostLayout plan_host_layout(const std::vector<std::string>& identities) {
  GRADWIRE_CHECK(!identities.empty());
  HostLayout layout;
  std::map<std::string, int> index_of;
  for (int rank = 0; rank < static_cast<int>(identities.size()); ++rank) {
    auto [at, fresh] = index_of.emplace(identities[rank], layout.host_count());
    if (fresh) {
      layout.hosts.push_back(identities[rank]);
      layout.members.emplace_back();
    }
    layout.host_of_rank.push_back(at->second);
    layout.members[at->second].push_back(rank);
  }
  return layout;
}

std::string choose_cpu_backend(const HostLayout& layout) {
  if (layout.single_host()) return "shm";
  if (layout.one_rank_per_host()) return "gloo";
  return "hierarchical";
}

}  // namespace gradwire
