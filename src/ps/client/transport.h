// The transports a call to a parameter server travels by (internal to src/ps/client): gRPC on a
// completion queue the waiting thread polls, or the server's call channel in memory shared with
// it. Which one a call takes is decided in one place, Routes::start (routes.h, Note [call
// routes]); a CallQueue (client_queue.h) holds calls of either kind and waits through each call's
// transport.
//
// Note [caller polls]: with gRPC's callback API every answer is read by gRPC's own polling thread,
// which then wakes the waiting trainer: two thread hand-offs per call. On a host where trainers
// and servers share a few cores each hand-off can wait for a time slice, so the thread that waits
// for the answers polls the completion queue and reads them itself (gRPC's epoll engine lets any
// polling thread drive every connection's I/O).
//
// Thread safety: a GrpcTransport belongs to its CallQueue's thread; a ChannelTransport may be used
// by several threads (rpc::ChannelClient is thread-safe). Nothing is thrown on a transport's
// behalf: statuses stay in the calls.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/client_context.h>
#include <grpcpp/completion_queue.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "gradwire/common/timeline.h"
#include "ps/messages/call_summary.h"
#include "rpc/call_channel.h"
#include "rpc/proto/ps.grpc.pb.h"

namespace gradwire::ps {

using Stub = v1::ParameterServer::Stub;

class CallTransport;

// What every call to a server holds, whatever carries it; QueuedCall (client_queue.h) adds its
// typed request and response.
struct CallBase {
  using Clock = std::chrono::steady_clock;

  CallBase() = default;
  CallBase(const CallBase&) = delete;
  CallBase& operator=(const CallBase&) = delete;
  virtual ~CallBase() = default;

  grpc::ClientContext context;  // the token and the deadline, whichever transport carries it
  grpc::Status status;
  std::string address;
  int64_t answer_bytes = 0;  // the answer's size expected (a call channel takes it if it fits)
  Clock::time_point started = Clock::now();
  Stub* stub = nullptr;                      // the server's, for gRPC
  std::shared_ptr<CallTransport> transport;  // what carries it, once started
  uint64_t ticket = 0;                       // its ticket on a call channel
  bool done = false;                         // answered (status and response set) or given up
  int server = -1;                           // the server's index among the client's

  // Sets done (the call was answered or given up): every transport ends a call here. With a
  // timeline, the first time, records the call's span and a failure (client_timeline.cpp).
  void mark_done() {
    const bool first = !done;
    done = true;
    if (first && timeline::enabled()) timeline_done();
  }
  void timeline_done();

  std::chrono::milliseconds waited() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  }

  virtual const google::protobuf::Message& request_message() const = 0;
  virtual google::protobuf::Message* response_message() = 0;
  // The call-channel method of this kind of call; none: it never travels over a channel.
  virtual std::optional<rpc::ChannelMethod> channel_method() const = 0;
  // What the request carries, for the timeline (ps/messages/call_summary.h).
  virtual CallSummary summary() const = 0;
  // Starts the call over gRPC (stub set) on `queue`, tagged with this CallBase.
  virtual void start_grpc(grpc::CompletionQueue& queue) = 0;
};

// One way calls travel.
class CallTransport {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~CallTransport() = default;
  // How it carries calls, as the servers' metrics and the timeline name it: "grpc", "channel".
  virtual const char* label() const = 0;
  // Starts `call` (context, request, address set); false when this transport cannot take it,
  // and then nothing was started.
  virtual bool start(CallBase& call) = 0;
  // Waits until `call` was answered (done set) or `limit` passed; whether it was answered.
  virtual bool finish(CallBase& call, Clock::time_point limit) = 0;
  // Gives up `call`: it ends CANCELLED unless it was answered; finish() then returns soon.
  virtual void cancel(CallBase& call) = 0;
};

// gRPC on a completion queue that the waiting thread polls (Note [caller polls]): one per
// CallQueue. Every call it starts must be waited for before it is destroyed (the CallQueue does);
// the destructor drains the queue, as gRPC requires.
class GrpcTransport final : public CallTransport {
 public:
  GrpcTransport() = default;
  GrpcTransport(const GrpcTransport&) = delete;
  GrpcTransport& operator=(const GrpcTransport&) = delete;
  ~GrpcTransport() override {
    queue_.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (queue_.Next(&tag, &ok)) {
    }
  }

  const char* label() const override { return "grpc"; }
  bool start(CallBase& call) override {
    call.start_grpc(queue_);
    return true;
  }
  bool finish(CallBase& call, Clock::time_point limit) override {
    while (!call.done) {
      void* tag = nullptr;
      bool ok = false;
      const grpc::CompletionQueue::NextStatus next =
          limit == Clock::time_point::max()
              ? (queue_.Next(&tag, &ok) ? grpc::CompletionQueue::GOT_EVENT
                                        : grpc::CompletionQueue::SHUTDOWN)
              : queue_.AsyncNext(&tag, &ok, to_system(limit));
      if (next != grpc::CompletionQueue::GOT_EVENT) return false;
      static_cast<CallBase*>(tag)->mark_done();  // this call's answer or another one's
    }
    return true;
  }
  void cancel(CallBase& call) override { call.context.TryCancel(); }

 private:
  static std::chrono::system_clock::time_point to_system(Clock::time_point limit) {
    const auto left = limit - Clock::now();
    return std::chrono::system_clock::now() +
           std::chrono::duration_cast<std::chrono::system_clock::duration>(left);
  }

  grpc::CompletionQueue queue_;
};

// A server's call channel (rpc/call_channel.h, Note [call channels] in routes.h). It takes a
// call whose kind has a channel method, while the channel is usable and the request and the
// answer expected fit a slot. Thread-safe.
class ChannelTransport final : public CallTransport {
 public:
  explicit ChannelTransport(std::shared_ptr<rpc::ChannelClient> channel)
      : channel_(std::move(channel)) {}

  rpc::ChannelClient& channel() const { return *channel_; }
  const char* label() const override { return "channel"; }

  bool start(CallBase& call) override {
    const std::optional<rpc::ChannelMethod> method = call.channel_method();
    if (!method) return false;
    call.ticket = channel_->start(*method, call.request_message(), call.context.deadline(),
                                  call.answer_bytes, call.response_message(), &call.status);
    return call.ticket != 0;
  }
  bool finish(CallBase& call, Clock::time_point limit) override {
    if (!channel_->finish(call.ticket, limit)) return false;
    call.mark_done();
    return true;
  }
  void cancel(CallBase& call) override {
    channel_->cancel(call.ticket);
    call.mark_done();
  }

 private:
  const std::shared_ptr<rpc::ChannelClient> channel_;
};

}  // namespace gradwire::ps
