#include "cases/ps_transports.h"

#include <map>

namespace gradwire::bench {

std::string summarize_values(const std::vector<std::string>& values) {
  if (values.empty()) return "none";
  for (const auto& value : values) {
    if (value != values.front()) return kMixedTransports;
  }
  return values.front();
}

std::string summarize_transports(const std::vector<std::vector<std::string>>& lists) {
  std::vector<std::string> all;
  for (const auto& list : lists) all.insert(all.end(), list.begin(), list.end());
  return summarize_values(all);
}

std::string describe_transports(const std::vector<std::string>& servers) {
  if (servers.empty()) return "no servers";
  const std::string of_total = " of " + std::to_string(servers.size()) + " servers";
  // In the order the servers first use them.
  std::vector<std::string> order;
  std::map<std::string, int> counts;
  for (const auto& transport : servers) {
    if (counts[transport]++ == 0) order.push_back(transport);
  }
  std::string text;
  for (const auto& transport : order) {
    text += (text.empty() ? "" : ", ") + transport + " to " + std::to_string(counts[transport]) +
            of_total;
  }
  return text;
}

}  // namespace gradwire::bench
