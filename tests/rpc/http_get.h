// Test support: one HTTP/1.1 request to a metrics endpoint over a plain socket (the tests read what
// a scraper reads, status line and headers included).
#pragma once

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <string>

namespace gradwire::testing {

// A connected TCP socket to "HOST:PORT" ([V6]:PORT too), -1 when it cannot connect; reads time
// out after 10 s.
inline int connect_to(const std::string& address) {
  const size_t colon = address.rfind(':');
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  const std::string port = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
  int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) != 0) {
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(found);
  if (fd >= 0) {
    timeval timeout{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  }
  return fd;
}

// Sends `request` as it is and returns everything answered until the server closes (empty when
// it cannot connect).
inline std::string http_exchange(const std::string& address, const std::string& request) {
  const int fd = connect_to(address);
  if (fd < 0) return {};
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string answer;
  char buffer[65536];
  for (;;) {
    const ssize_t got = ::recv(fd, buffer, sizeof(buffer), 0);
    if (got <= 0) break;
    answer.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  return answer;
}

// The answer to "GET `path`" (status line, headers and body).
inline std::string http_get(const std::string& address, const std::string& path = "/metrics") {
  return http_exchange(address, "GET " + path + " HTTP/1.1\r\nHost: " + address +
                                    "\r\nAccept: text/plain\r\nConnection: close\r\n\r\n");
}

// The body of an answer (after the blank line), empty when there is none.
inline std::string http_body(const std::string& answer) {
  const size_t end = answer.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : answer.substr(end + 4);
}

}  // namespace gradwire::testing
