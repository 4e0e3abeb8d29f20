// A small HTTP/1.1 server that answers GET /metrics with a text a callback renders (rpc-internal;
// the parameter server's Prometheus endpoint, docs/observability.md). Read-only by design: GET
// /metrics is the only thing it serves (another path is 404, another method 405 with "Allow:
// GET"), it reads no token and changes nothing.
//
// Bounds: requests of at most kMaxHttpRequestBytes of headers (431 beyond; a body is never read),
// each connection closed after one answer or after kHttpReadTimeout without a whole request, at
// most kMaxHttpConnections open at once (more are closed at once).
//
// Threads: one, started by the constructor, which accepts, reads, calls `render` and writes (a
// slow client does not hold the others: sockets are non-blocking). stop() (and the destructor)
// ends it and closes every socket; nothing is left running. `render` runs on that thread and
// must not throw (an exception becomes a 500 answer).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace gradwire::rpc {

inline constexpr size_t kMaxHttpRequestBytes = 8192;
inline constexpr std::chrono::milliseconds kHttpReadTimeout{5000};
inline constexpr int kMaxHttpConnections = 16;

// The Content-Type of Prometheus's text exposition format.
inline constexpr char kPrometheusTextType[] = "text/plain; version=0.0.4; charset=utf-8";

// One HTTP request line and what to answer: pure, for the tests.
struct HttpAnswer {
  int status = 200;  // 200, 400, 404, 405, 431
  std::string reason;
};
// The answer to a request whose head (request line and headers, up to the blank line) is `head`.
HttpAnswer answer_http_request(const std::string& head);

class MetricsEndpoint {
 public:
  // Binds `listen` ("HOST:PORT", "[V6]:PORT" or "PORT" for 127.0.0.1:PORT; port 0 picks a free
  // one) and starts serving. ConfigError when it cannot bind, naming the address.
  MetricsEndpoint(const std::string& listen, std::function<std::string()> render);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // "HOST:PORT" bound (the picked port when `listen` had port 0).
  const std::string& address() const { return address_; }
  // Stops serving: closes the listening socket and every connection, joins the thread.
  // Idempotent; blocks at most as long as one render.
  void stop();

 private:
  void serve();

  std::function<std::string()> render_;
  std::string address_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd that stop() writes
  std::thread thread_;
};

}  // namespace gradwire::rpc
