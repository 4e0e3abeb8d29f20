// Calls to several parameter servers at once: each call runs on gRPC's callback API and its
// result lands in a Pending object the caller waits on. Nothing is thrown on gRPC's threads: the
// status travels to the waiter, who turns it into a gradwire error naming the server.
//
// Thread safety: a Pending may be waited on from one thread while gRPC completes it on another.
#pragma once

#include <grpcpp/client_context.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

namespace gradwire::ps {

// One call in flight: its context, request, response and, once done, its status.
template <typename Request, typename Response>
struct PendingCall {
  grpc::ClientContext context;
  Request request;
  Response response;
  grpc::Status status;
  std::string address;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  // Called by gRPC once (any thread).
  void complete(grpc::Status result) {
    std::lock_guard<std::mutex> lock(mutex_);
    status = std::move(result);
    done_ = true;
    done_changed_.notify_all();
  }
  // Blocks until gRPC completed the call or `deadline` passed (false). gRPC completes every call
  // by its own deadline, so callers pass that deadline plus a margin.
  bool wait(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    return done_changed_.wait_until(lock, deadline, [this] { return done_; });
  }
  std::chrono::milliseconds waited() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 started);
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
};

}  // namespace gradwire::ps
