// The servers of a gradwire-ps-server process on the timeline (server_label.h).
#include "server_label.h"

#include <sstream>

namespace gradwire::ps_server {

int first_server_index(const std::optional<int>& given, const std::vector<std::string>& listen,
                       const std::string& ps_addrs) {
  if (given) return *given;
  if (listen.empty()) return 0;
  std::istringstream addresses(ps_addrs);
  std::string address;
  for (int index = 0; std::getline(addresses, address, ','); ++index) {
    if (address == listen.front()) return index;
  }
  return 0;
}

std::string server_timeline_name(int index) { return "ps server " + std::to_string(index); }

std::string process_label(int first, int count) {
  if (count <= 1) return server_timeline_name(first);
  return "ps servers " + std::to_string(first) + "-" + std::to_string(first + count - 1);
}

}  // namespace gradwire::ps_server
