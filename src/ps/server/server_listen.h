// Parsing the server's listen address "HOST:PORT" ("[::1]:0" for IPv6) and writing it back with
// the port actually bound (server-internal; pure).
#pragma once

#include <string>

namespace gradwire::ps {

struct ListenAddress {
  std::string host;  // as written, brackets included for IPv6
  int port = 0;      // 0: pick a free one
  std::string with_port(int bound_port) const { return host + ":" + std::to_string(bound_port); }
};

// ConfigError naming the text when it is not HOST:PORT with a port in [0, 65535].
ListenAddress parse_listen_address(const std::string& text);

}  // namespace gradwire::ps
