// The HTTP endpoint that serves the metrics of the servers of this process which name the same
// metrics address (server-internal; docs/observability.md): each server attaches its metrics with
// its own address as the `server` label, and a scrape renders them all as one text.
//
// Thread safety: every member may be called from any thread. Rendering runs on the endpoint's
// thread under mutex_; detach() returns once no scrape reads the detached metrics any more, and
// the last detach stops the endpoint (its thread joined, its sockets closed).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ps/server/server_metrics.h"
#include "rpc/metrics_endpoint.h"

namespace gradwire::ps {

class MetricsPublisher {
 public:
  // Binds `listen` (rpc::MetricsEndpoint: HOST:PORT, port 0 picks one; ConfigError when it
  // cannot) and serves what is attached.
  explicit MetricsPublisher(const std::string& listen);

  // "HOST:PORT" bound.
  const std::string& address() const { return endpoint_->address(); }
  // Serves `metrics` labelled server=`server` from now on; `metrics` must stay alive until
  // detach().
  void attach(const std::string& server, const ServerMetrics* metrics);
  // Stops serving `metrics`; the last one detached stops the endpoint.
  void detach(const ServerMetrics* metrics);

  // The text a scrape answers now.
  std::string render() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, const ServerMetrics*>> attached_;  // guarded by mutex_
  std::unique_ptr<rpc::MetricsEndpoint> endpoint_;
};

}  // namespace gradwire::ps
