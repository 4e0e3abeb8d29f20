#include "ps/server/server_listen.h"

#include <arpa/inet.h>
#include <netinet/in.h>

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

bool is_loopback(const ListenAddress& address) {
  std::string host = address.host;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  std::string lower = host;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

std::string plaintext_warning(const ListenAddress& address, bool tls) {
  if (tls || is_loopback(address)) return "";
  return "gradwire-ps-server: warning: listening on " + address.host +
         " without TLS: the job's token and the tables cross the network in clear text. Serve "
         "TLS with --tls-cert CERT.pem --tls-key KEY.pem (ServerOptions::tls_cert_file, "
         "tls_key_file) and give trainers the roots to trust (GRADWIRE_TLS_ROOTS), or listen on "
         "127.0.0.1 on a trusted host.";
}

std::string metrics_exposure_warning(const std::string& address) {
  const ListenAddress parsed = parse_listen_address(address);
  if (is_loopback(parsed)) return "";
  return "gradwire-ps-server: warning: serving metrics on " + parsed.host +
         " without a token: anyone who reaches port " + std::to_string(parsed.port) +
         " reads the table names and the load (nothing can be changed there). Serve them on "
         "127.0.0.1 (--metrics PORT) unless the network is trusted.";
}

}  // namespace gradwire::ps
