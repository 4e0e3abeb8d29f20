// Parsing the server's listen address "HOST:PORT" ("[::1]:0" for IPv6), writing it back with
// the port actually bound, and telling loopback from the network (server-internal; pure).
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

// Whether the address is reachable only from this host: 127.0.0.0/8, ::1 (also as
// ::ffff:127.x.y.z) or the name localhost. The wildcards 0.0.0.0 and [::] listen on every
// interface, so they are not; nor is any other name (what it resolves to is not looked up).
bool is_loopback(const ListenAddress& address);

// The one line a server without TLS prints on stderr when it listens beyond loopback: the token
// and the tables cross the network in clear text, and how to turn TLS on. Empty when `tls` or
// the address is loopback.
std::string plaintext_warning(const ListenAddress& address, bool tls);

// The one line a server prints on stderr when its metrics endpoint (bound at `address`,
// "HOST:PORT") listens beyond loopback: anyone who reaches it reads the table names and the load,
// without a token. Empty on loopback.
std::string metrics_exposure_warning(const std::string& address);

}  // namespace gradwire::ps
