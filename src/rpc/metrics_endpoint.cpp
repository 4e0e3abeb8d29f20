#include "rpc/metrics_endpoint.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>

#include "gradwire/common/error.h"

namespace gradwire::rpc {
namespace {

using HttpClock = std::chrono::steady_clock;

// One connection: what it sent so far, then the answer being written.
struct HttpConnection {
  int fd = -1;
  std::string in;
  std::string out;
  size_t written = 0;
  bool answering = false;
  HttpClock::time_point deadline;
};

std::string http_response(int status, const std::string& reason, const std::string& type,
                          const std::string& body, const std::string& extra_headers = "") {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra_headers +
         "Connection: close\r\n\r\n" + body;
}

// Where the request's head ends (after its blank line), or npos.
size_t head_end(const std::string& in) {
  const size_t crlf = in.find("\r\n\r\n");
  if (crlf != std::string::npos) return crlf + 4;
  const size_t lf = in.find("\n\n");
  return lf == std::string::npos ? std::string::npos : lf + 2;
}

struct HostPort {
  std::string host;     // brackets removed
  std::string written;  // as given, brackets kept
  std::string port;
};

HostPort split_listen(const std::string& listen) {
  const auto fail = [&listen] {
    return ConfigError("gradwire: cannot serve metrics on '" + listen +
                       "': use HOST:PORT (127.0.0.1:9400, [::1]:9400; port 0 picks a free one) or "
                       "PORT alone for 127.0.0.1:PORT");
  };
  HostPort parts;
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    parts.host = parts.written = "127.0.0.1";
    parts.port = listen;
  } else {
    parts.written = listen.substr(0, colon);
    parts.port = listen.substr(colon + 1);
    parts.host = parts.written;
    if (parts.host.size() >= 2 && parts.host.front() == '[' && parts.host.back() == ']') {
      parts.host = parts.host.substr(1, parts.host.size() - 2);
    } else if (parts.host.find(':') != std::string::npos) {
      throw fail();
    }
  }
  if (parts.host.empty() || parts.port.empty() || parts.port.size() > 5) throw fail();
  for (const char c : parts.port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) throw fail();
  }
  if (std::stoi(parts.port) > 65535) throw fail();
  return parts;
}

int bound_port(int fd) {
  sockaddr_storage address{};
  socklen_t size = sizeof(address);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) return 0;
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

HttpAnswer answer_http_request(const std::string& head) {
  const size_t line_end = head.find_first_of("\r\n");
  const std::string line = head.substr(0, line_end);
  const size_t first = line.find(' ');
  const size_t second = first == std::string::npos ? first : line.find(' ', first + 1);
  if (first == std::string::npos || second == std::string::npos ||
      line.compare(second + 1, 5, "HTTP/") != 0) {
    return {400, "Bad Request"};
  }
  const std::string method = line.substr(0, first);
  std::string target = line.substr(first + 1, second - first - 1);
  target = target.substr(0, target.find('?'));
  if (target != "/metrics") return {404, "Not Found"};
  if (method != "GET") return {405, "Method Not Allowed"};
  return {200, "OK"};
}

MetricsEndpoint::MetricsEndpoint(const std::string& listen, std::function<std::string()> render)
    : render_(std::move(render)) {
  const HostPort parts = split_listen(listen);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int resolved = ::getaddrinfo(parts.host.c_str(), parts.port.c_str(), &hints, &found);
  std::string why = resolved != 0 ? ::gai_strerror(resolved) : "";
  for (addrinfo* at = found; at != nullptr && listen_fd_ < 0; at = at->ai_next) {
    const int fd = ::socket(at->ai_family, at->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (::bind(fd, at->ai_addr, at->ai_addrlen) == 0 && ::listen(fd, 64) == 0) {
      listen_fd_ = fd;
    } else {
      why = std::strerror(errno);
      ::close(fd);
    }
  }
  if (found != nullptr) ::freeaddrinfo(found);
  if (listen_fd_ < 0) {
    throw ConfigError("gradwire: cannot serve metrics on " + listen + " (" + why +
                      "). Pick another --metrics HOST:PORT (port 0 picks a free one).");
  }
  address_ = parts.written + ":" + std::to_string(bound_port(listen_fd_));
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    close_fd(listen_fd_);
    throw ConfigError(std::string("gradwire: cannot serve metrics: eventfd: ") +
                      std::strerror(errno));
  }
  thread_ = std::thread([this] { serve(); });
}

MetricsEndpoint::~MetricsEndpoint() { stop(); }

void MetricsEndpoint::stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    while (::write(wake_fd_, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  close_fd(listen_fd_);
  close_fd(wake_fd_);
}

void MetricsEndpoint::serve() {
  std::vector<HttpConnection> connections;
  const auto answer = [this](HttpConnection& connection) {
    const HttpAnswer verdict =
        answer_http_request(connection.in.substr(0, head_end(connection.in)));
    connection.answering = true;
    if (verdict.status != 200) {
      connection.out =
          http_response(verdict.status, verdict.reason, "text/plain; charset=utf-8",
                        verdict.reason + "\n", verdict.status == 405 ? "Allow: GET\r\n" : "");
      return;
    }
    try {
      connection.out = http_response(200, "OK", kPrometheusTextType, render_());
    } catch (const std::exception& error) {
      connection.out = http_response(500, "Internal Server Error", "text/plain; charset=utf-8",
                                     std::string(error.what()) + "\n");
    }
  };
  for (;;) {
    std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    auto nearest = HttpClock::now() + kHttpReadTimeout;
    for (const HttpConnection& connection : connections) {
      fds.push_back(
          {connection.fd, static_cast<short>(connection.answering ? POLLOUT : POLLIN), 0});
      nearest = std::min(nearest, connection.deadline);
    }
    const auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(nearest - HttpClock::now());
    const int ready =
        ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, wait.count() + 1)));
    if (ready < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;  // stop()
    if (fds[1].revents & POLLIN) {
      for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        if (static_cast<int>(connections.size()) >= kMaxHttpConnections) {
          ::close(fd);
          continue;
        }
        connections.push_back({fd, {}, {}, 0, false, HttpClock::now() + kHttpReadTimeout});
      }
    }
    const auto now = HttpClock::now();
    for (size_t i = 0; i < connections.size(); ++i) {
      HttpConnection& connection = connections[i];
      const short events = i + 2 < fds.size() ? fds[i + 2].revents : 0;
      bool done = false;
      if (!connection.answering && (events & (POLLIN | POLLHUP | POLLERR))) {
        char buffer[4096];
        const ssize_t got = ::recv(connection.fd, buffer, sizeof(buffer), 0);
        if (got <= 0) {
          done = !(got < 0 && (errno == EAGAIN || errno == EINTR));
        } else {
          connection.in.append(buffer, static_cast<size_t>(got));
          const size_t end = head_end(connection.in);
          if (end != std::string::npos && end <= kMaxHttpRequestBytes) {
            answer(connection);
          } else if (end != std::string::npos || connection.in.size() > kMaxHttpRequestBytes) {
            connection.answering = true;
            connection.out = http_response(431, "Request Header Fields Too Large",
                                           "text/plain; charset=utf-8", "request too large\n");
          }
        }
      }
      if (connection.answering && !done) {
        const ssize_t sent = ::send(connection.fd, connection.out.data() + connection.written,
                                    connection.out.size() - connection.written, MSG_NOSIGNAL);
        if (sent > 0) connection.written += static_cast<size_t>(sent);
        done = (sent < 0 && errno != EAGAIN && errno != EINTR) ||
               connection.written == connection.out.size();
      }
      if (done || now >= connection.deadline) {
        if (connection.answering && connection.written == connection.out.size()) {
          ::shutdown(connection.fd, SHUT_WR);
        }
        // What the client sent beyond the head is read away: closing a socket with unread data
        // resets the connection, and the client could lose the answer.
        char rest[4096];
        while (::recv(connection.fd, rest, sizeof(rest), MSG_DONTWAIT) > 0) {
        }
        ::close(connection.fd);
        connections.erase(connections.begin() + static_cast<std::ptrdiff_t>(i));
        fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i) + 2);
        --i;
      }
    }
  }
  for (HttpConnection& connection : connections) ::close(connection.fd);
}

}  // namespace gradwire::rpc
