// Calls to several parameter servers at once on a grpc::CompletionQueue that the waiting thread
// polls itself. Note [caller polls]: with gRPC's callback API every answer is read by gRPC's own
// polling thread, which then wakes the waiting trainer: two thread hand-offs per call. On a host
// where trainers and servers share a few cores each hand-off can wait for a time slice, so the
// thread that waits for the answers polls the queue and reads them itself (gRPC's epoll engine
// lets any polling thread drive every connection's I/O).
//
// Calls to a server that serves this trainer's shared-memory channel go over it instead
// (rpc/call_channel.h); wait() finishes those first, then polls the queue for the gRPC ones.
//
// Thread safety: a CallQueue belongs to one thread at a time (start and wait from the same thread,
// or hand it over under a lock). Nothing is thrown on gRPC's behalf: statuses stay in the calls.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/completion_queue.h>
#include <grpcpp/support/async_unary_call.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/wait_interrupt.h"
#include "rpc/call_channel.h"

namespace gradwire::ps {

// One unary call: its context, request, response, reader and, once done, its status.
template <typename Request, typename Response>
struct QueuedCall {
  using RequestType = Request;
  using ResponseType = Response;

  grpc::ClientContext context;
  Request request;
  Response response;
  grpc::Status status;
  std::string address;
  int64_t answer_bytes = 0;  // the answer's size expected (a call channel takes it if it fits)
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::unique_ptr<grpc::ClientAsyncResponseReader<Response>> reader;
  std::shared_ptr<rpc::ChannelClient> channel;  // set when the call went over shared memory
  uint64_t ticket = 0;                          // its ticket there
  bool done = false;

  std::chrono::milliseconds waited() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 started);
  }
};

// A completion queue and the calls started on it; owns the calls. The destructor waits for calls
// still running (gRPC ends each by its deadline) and drains the queue, as gRPC requires.
template <typename Call>
class CallQueue {
 public:
  using Clock = std::chrono::steady_clock;

  CallQueue() = default;
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;
  ~CallQueue() {
    wait(Clock::time_point::max());
    queue_.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (queue_.Next(&tag, &ok)) {
    }
  }

  // Starts `call` (context, request and address set): over `channel` as `method` when it is given
  // and takes the call (`answer_bytes`: the answer's size expected), else over gRPC:
  // `prepare(context, request, queue)` returns the stub's PrepareAsync<Method> reader. Returns the
  // call, owned by this queue.
  template <typename Prepare>
  Call& start(std::unique_ptr<Call> call, Prepare prepare,
              const std::shared_ptr<rpc::ChannelClient>& channel = nullptr,
              rpc::ChannelMethod method = rpc::ChannelMethod::kLookup, int64_t answer_bytes = 0) {
    call->started = Clock::now();
    if (channel) {
      call->ticket = channel->start(method, call->request, call->context.deadline(), answer_bytes,
                                    &call->response, &call->status);
      if (call->ticket != 0) {
        call->channel = channel;
        calls_.push_back(std::move(call));
        return *calls_.back();
      }
    }
    call->reader = prepare(&call->context, call->request, &queue_);
    call->reader->StartCall();
    call->reader->Finish(&call->response, &call->status, call.get());
    calls_.push_back(std::move(call));
    ++pending_;
    return *calls_.back();
  }

  // Polls until every call started so far completed (true) or `limit` passed (false).
  bool wait(Clock::time_point limit) {
    for (const auto& call : calls_) {
      if (call->channel && !call->done) {
        if (!call->channel->finish(call->ticket, limit)) return false;
        call->done = true;
      }
    }
    while (pending_ > 0) {
      void* tag = nullptr;
      bool ok = false;
      const grpc::CompletionQueue::NextStatus next =
          limit == Clock::time_point::max()
              ? (queue_.Next(&tag, &ok) ? grpc::CompletionQueue::GOT_EVENT
                                        : grpc::CompletionQueue::SHUTDOWN)
              : queue_.AsyncNext(&tag, &ok, to_system(limit));
      if (next != grpc::CompletionQueue::GOT_EVENT) return false;
      static_cast<Call*>(tag)->done = true;
      --pending_;
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
      if (call->done) continue;
      if (call->channel) {
        call->channel->cancel(call->ticket);
        call->done = true;
      } else {
        call->context.TryCancel();
      }
    }
    wait(Clock::now() + margin);
  }

  static std::chrono::system_clock::time_point to_system(Clock::time_point limit) {
    const auto left = limit - Clock::now();
    return std::chrono::system_clock::now() +
           std::chrono::duration_cast<std::chrono::system_clock::duration>(left);
  }

  grpc::CompletionQueue queue_;
  std::vector<std::unique_ptr<Call>> calls_;
  size_t pending_ = 0;
};

}  // namespace gradwire::ps
