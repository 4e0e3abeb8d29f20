// Calls to several parameter servers at once, waited for by the calling thread: a CallQueue holds
// the calls it started, each on the transport its route chose (transport.h; Routes::start in
// routes.h decides), and waits through each call's transport: the gRPC ones on the queue's own
// completion queue, polled by the waiting thread (Note [caller polls]), the others on the servers'
// call channels.
//
// Thread safety: a CallQueue belongs to one thread at a time (start and wait from the same thread,
// or hand it over under a lock). Nothing is thrown on gRPC's behalf: statuses stay in the calls.
#pragma once

#include <grpcpp/support/async_unary_call.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "common/wait_interrupt.h"
#include "transport.h"

namespace gradwire::ps {

// One unary call of the kind `Route` describes (client_calls.h: its request and response types,
// its gRPC method and its call-channel method, if any): request, response, and the gRPC reader.
template <typename Route>
struct QueuedCall final : CallBase {
  using RouteType = Route;
  using RequestType = typename Route::Request;
  using ResponseType = typename Route::Response;

  RequestType request;
  ResponseType response;
  std::unique_ptr<grpc::ClientAsyncResponseReader<ResponseType>> reader;

  const google::protobuf::Message& request_message() const override { return request; }
  google::protobuf::Message* response_message() override { return &response; }
  std::optional<rpc::ChannelMethod> channel_method() const override { return Route::kChannel; }
  CallSummary summary() const override { return summarize(request); }
  void start_grpc(grpc::CompletionQueue& queue) override {
    reader = (stub->*Route::kGrpc)(&context, request, &queue);
    reader->StartCall();
    reader->Finish(&response, &status, static_cast<CallBase*>(this));
  }
};

// The calls started on it, each with its transport, and the gRPC transport of the calls that go
// over gRPC; owns the calls. The destructor waits for calls still running (gRPC ends each by its
// deadline, a call channel by the call's).
template <typename Call>
class CallQueue {
 public:
  using Clock = std::chrono::steady_clock;

  CallQueue() = default;
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;
  ~CallQueue() { wait(Clock::time_point::max()); }

  // The transport for this queue's gRPC calls (Routes::start takes it).
  const std::shared_ptr<GrpcTransport>& grpc() const { return grpc_; }

  // Takes `call`, already started on `call->transport`; returns it, owned by this queue.
  Call& add(std::unique_ptr<Call> call) {
    calls_.push_back(std::move(call));
    return *calls_.back();
  }

  // Waits until every call started so far completed (true) or `limit` passed (false).
  bool wait(Clock::time_point limit) {
    for (const auto& call : calls_) {
      if (!call->done && !call->transport->finish(*call, limit)) return false;
    }
    return true;
  }

  // wait(limit); calls still running then are cancelled and waited for `margin` more (gRPC ends a
  // cancelled call at once; the margin only guards against a bug). While a wait interrupt is
  // installed on this thread (Note [interrupted waits], common/wait_interrupt.h) it waits in
  // slices and asks it between them; what it throws cancels the calls and passes through.
  void wait_or_cancel(Clock::time_point limit, std::chrono::milliseconds margin) {
    if (!gradwire::detail::wait_interrupt_installed()) {
      if (wait(limit)) return;
    } else {
      for (;;) {
        if (wait(std::min(limit, Clock::now() + gradwire::detail::kWaitInterruptSlice))) return;
        if (Clock::now() >= limit) break;
        try {
          gradwire::detail::check_wait_interrupt();
        } catch (...) {
          cancel_all(margin);
          throw;
        }
      }
    }
    cancel_all(margin);
  }

  const std::vector<std::unique_ptr<Call>>& calls() const { return calls_; }

 private:
  // Cancels the calls still running and waits `margin` for them.
  void cancel_all(std::chrono::milliseconds margin) {
    for (const auto& call : calls_) {
      if (!call->done) call->transport->cancel(*call);
    }
    wait(Clock::now() + margin);
  }

  // Before the calls: they are destroyed first, once waited for.
  std::shared_ptr<GrpcTransport> grpc_ = std::make_shared<GrpcTransport>();
  std::vector<std::unique_ptr<Call>> calls_;
};

}  // namespace gradwire::ps
