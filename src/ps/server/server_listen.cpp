#include "ps/server/server_listen.h"

#include <cctype>

#include "gradwire/common/error.h"

namespace gradwire::ps {

ListenAddress parse_listen_address(const std::string& text) {
  const auto fail = [&text](const std::string& why) {
    return ConfigError("gradwire: cannot listen on '" + text + "': " + why +
                       ". Use HOST:PORT, e.g. 127.0.0.1:0 (port 0 picks a free one), "
                       "0.0.0.0:5000 or [::1]:5000.");
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) throw fail("no HOST:PORT");
  ListenAddress address;
  address.host = text.substr(0, colon);
  if (address.host.find(':') != std::string::npos &&
      (address.host.front() != '[' || address.host.back() != ']')) {
    throw fail("an IPv6 host must be written in brackets");
  }
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5) throw fail("bad port '" + port + "'");
  for (const char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) throw fail("bad port '" + port + "'");
  }
  address.port = std::stoi(port);
  if (address.port > 65535) throw fail("port " + port + " is above 65535");
  return address;
}

}  // namespace gradwire::ps
