// Calls over memory shared between a trainer and a parameter server on its host (docs/ps.md
// "Shared-memory calls"): the same protobuf requests and answers as the gRPC service, written into
// slots of a region of the trainer (rpc/shared_memory.h) and handed over with futex waits, so a
// call costs two wake-ups instead of HTTP/2 framing, loopback TCP and gRPC's threads.
//
// The channel: a header and kSlots slots of kSlotBytes, each with a futex word (free, request
// posted, request taken, answer posted). The trainer posts call n into slot n % kSlots, the
// server's hub (ChannelHub) takes the slots in that order, and answers may come back out of order
// while a handler blocks; the trainer may have kSlots calls in flight per server. A server
// attaches a channel only in an authenticated CreateTable, after the same checks as any
// shared region; the channel then is the credential of the calls on it (a process that can write
// it can read the trainer's memory, token included). Every request is bounded by kSlotBytes and
// copied out of the slot before it is parsed; methods are a fixed set.
//
// Nothing hangs: the trainer waits for an answer until the call's deadline and checks every
// kLivenessSlice that the server's process lives (UNAVAILABLE naming it otherwise); a timed-out
// channel is broken and takes no more calls (the client goes on over gRPC). The server stops
// serving a channel when the trainer closes the channel, its process ends, or the server stops.
//
// Thread safety: ChannelClient, ChannelHub and ChannelServer are safe to use from several threads;
// a ChannelHub runs threads of its own (one per trainer process, more while handlers block).
// Linux only.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/support/status.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "rpc/shared_memory.h"

namespace gradwire::rpc {

// The methods a channel carries: the hot path, which travels in Batch calls (the client's route
// table, ps/client/client_calls.h); everything else goes over gRPC. 1 to 3 were Lookup, Push and
// Step, which no client sent any more: a slot naming them is refused as an unknown method.
enum class ChannelMethod : uint32_t { kBatch = 4 };

inline constexpr int kChannelSlots = 4;
inline constexpr int64_t kChannelSlotBytes = int64_t{1} << 20;
// How often a waiting side checks that the other side's process lives.
inline constexpr std::chrono::milliseconds kLivenessSlice{200};

// The trainer's end of one channel to one server.
class ChannelClient {
 public:
  using SystemTime = std::chrono::system_clock::time_point;
  using SteadyTime = std::chrono::steady_clock::time_point;

  // Creates the channel's region in `regions`; `address` names the server in errors.
  ChannelClient(SharedRegions& regions, std::string address);
  ChannelClient(const ChannelClient&) = delete;
  ChannelClient& operator=(const ChannelClient&) = delete;
  // Closes the channel (the server stops serving it); calls still in flight are waited for until
  // their deadlines.
  ~ChannelClient();

  // The region to name in CreateTable.
  const v1::SharedBytes& reference() const { return reference_; }
  // The server said it serves the channel: calls may go over it from now on.
  void attached();
  // Whether start() may take calls: attached and not broken.
  bool usable() const;

  // Posts a call and returns its ticket, or 0 when the channel cannot take it (not usable, or the
  // request or the `answer_bytes` expected are larger than a slot): the caller sends it over gRPC
  // then. `response` and `status` must stay valid until finish() returned true or cancel() was
  // called for the ticket. When all slots are taken, first waits for the oldest call (until its
  // deadline), holding the channel.
  uint64_t start(ChannelMethod method, const google::protobuf::Message& request,
                 SystemTime deadline, int64_t answer_bytes, google::protobuf::Message* response,
                 grpc::Status* status);
  // Waits until call `ticket` was answered (its response and status filled) or `limit` passed,
  // whichever comes first, and true when it was answered. A call whose own deadline passes is
  // answered DEADLINE_EXCEEDED (and the channel broken); one whose server died, UNAVAILABLE.
  bool finish(uint64_t ticket, SteadyTime limit);
  // Gives up call `ticket`: answered CANCELLED unless it was answered already; breaks the channel
  // (the server may still write the slot).
  void cancel(uint64_t ticket);

 private:
  struct Pending {
    google::protobuf::Message* response;
    grpc::Status* status;
    SteadyTime deadline;
  };
  bool finish_locked(uint64_t ticket, SteadyTime limit);
  void fail_locked(uint64_t ticket, grpc::Status status);

  const std::string address_;
  at::Tensor region_;
  v1::SharedBytes reference_;
  void* base_ = nullptr;

  mutable std::mutex mutex_;
  bool attached_ = false;
  bool broken_ = false;
  int64_t server_pid_ = 0;
  uint64_t next_ = 1;                    // the next call's ticket; slot (ticket - 1) % kSlots
  std::map<uint64_t, Pending> pending_;  // posted, not yet answered to the caller
};

// One call as the server's handler sees it.
struct ChannelCall {
  ChannelMethod method;
  const std::string& request;  // the request's bytes, copied out of the slot
  std::chrono::system_clock::time_point deadline;
  std::function<bool()> cancelled;  // the trainer went away, or the channel or the hub stops
  // A handler calls this before it blocks for long (a sync Step waiting for other trainers, a
  // lookup waiting for a dense table's values): the hub's thread hands the trainer's other calls
  // to another thread first (Note [hub threads] in channel_hub.cpp). Calling it more than once
  // is fine.
  std::function<void()> will_wait;
};
// Parses the request and runs the call; on success *answer holds the answer to send.
using ChannelHandler = std::function<grpc::Status(
    const ChannelCall& call, std::unique_ptr<google::protobuf::Message>* answer)>;

class ChannelServer;

// The server's end for every channel of one process's servers: one thread per trainer process
// answers all the channels that trainer attached to any server sharing the hub, waiting on all of
// them at once (futex_wait_any), instead of a thread per channel: with eight servers in a process
// a trainer's calls cost one thread's wake-ups, not eight. A handler that blocks hands the
// trainer's other channels to another of the trainer's threads (ChannelCall::will_wait), so one
// trainer's blocked Step never holds its calls to other servers. A trainer's threads end when its
// process ends or it closed all its channels here; the hub's destructor stops and waits for all.
class ChannelHub {
 public:
  ChannelHub() = default;
  ChannelHub(const ChannelHub&) = delete;
  ChannelHub& operator=(const ChannelHub&) = delete;
  // Stops every channel (running calls see cancelled()) and waits until all threads ended.
  // Precondition: the ChannelServer handles were stopped or destroyed first, or their handlers
  // stay valid until then.
  ~ChannelHub();

  // Maps the channel `ref` names through `cache` (InvalidArgument as SharedRegionCache::view, or
  // when the region is no channel), tells the trainer this process serves it and answers its
  // calls with `handler` until the handle is stopped, the trainer closes the channel or exits.
  std::unique_ptr<ChannelServer> attach(SharedRegionCache& cache, const v1::SharedBytes& ref,
                                        ChannelHandler handler);
  // Threads running now (serving, blocked in a call, or idle for a trainer), for tests.
  int threads() const;

  struct Channel;
  struct Group;

 private:
  friend class ChannelServer;
  static void run(ChannelHub* hub, std::shared_ptr<Group> group);
  // Serves the group while this thread holds its role; returns having given the role up (handed
  // off in a blocking call, or the group ended).
  void serve(const std::shared_ptr<Group>& group);
  void start_thread(const std::shared_ptr<Group>& group);
  // Ends `group` (its threads end) when it has no channel left or the trainer is gone; false
  // when a channel came meanwhile.
  bool end_group(Group& group, bool trainer_gone);

  mutable std::mutex mutex_;
  std::condition_variable threads_ended_;
  std::map<int64_t, std::shared_ptr<Group>> groups_;  // by trainer process
  int threads_ = 0;                                   // running, under mutex_
};

// One attached channel, as its server holds it.
class ChannelServer {
 public:
  ChannelServer(const ChannelServer&) = delete;
  ChannelServer& operator=(const ChannelServer&) = delete;
  // stop(), then waits until no call of the channel runs and detaches it from the hub.
  ~ChannelServer();

  // Serves no more calls of the channel: a call of it running now sees cancelled().
  void stop();
  // Whether the channel is no longer served (stopped, closed by the trainer, trainer gone).
  bool ended() const;

 private:
  friend class ChannelHub;
  ChannelServer(std::shared_ptr<ChannelHub::Group> group,
                std::shared_ptr<ChannelHub::Channel> channel);
  std::shared_ptr<ChannelHub::Group> group_;
  std::shared_ptr<ChannelHub::Channel> channel_;
};

}  // namespace gradwire::rpc
