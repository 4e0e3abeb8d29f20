// How the client's calls travel to each server (internal to src/ps/client): the one place where a
// call's transport (gRPC or the server's call channel, transport.h) and the form of its tensors
// (bytes or references to shared memory) are chosen. docs/ps.md "Routes" has the table per entry
// point of the Client.
//
// Note [call routes]: every call goes to one server by one of two transports, and Routes::start
// decides which, once per call:
// - the server's call channel (Note [call channels]) for a kind of call that has a channel method
//   in the route table (client_calls.h: Batch only), when the server serves this trainer's
//   channel (create_table opened it and nothing broke it since) and the request and the answer
//   expected fit a slot (rpc::kChannelSlotBytes); batch_limits() keeps a batch to such a server
//   within a slot, so only a single part larger than that (a lookup of more than about 4000 rows
//   of 64 floats) goes over gRPC;
// - gRPC otherwise: CreateTable, Resume, Assign and Checkpoint always, and every call to a server
//   on another host, with shared memory off on either side, or once its channel broke (a call that
//   timed out or was cancelled, the server's exit). A channel that breaks between the check and
//   the start (another thread's call timed out) takes nothing: that call goes over gRPC too.
// Lookups, pushes and steps travel only in Batch calls (Note [batched calls] in batch_plan.h); the
// server has no other door for them (the unary Lookup, Push and Step RPCs and the channel's
// methods for them are gone). How their tensors travel is chosen here as well: push_reference()
// and lookup_into() (Note [shared memory]).
//
// Note [call channels]: a trainer on the server's host sends its batches through a channel in
// its own shared memory (rpc/call_channel.h) instead of gRPC: a request and its answer cost a
// futex wake each way, not HTTP/2, loopback TCP and gRPC's thread hand-offs. The client makes one
// channel per server (offer(), at the first create_table with shared memory on) and names it in
// CreateTable; a server that passed the shared-memory probe answers `channel` and serves it from
// its process's rpc::ChannelHub (one thread per trainer process for all the servers of that
// process, more while calls block) until the trainer closes it (the client is destroyed) or exits,
// or the server stops. The channel is the credential of the calls on it (whoever can write it can
// read the trainer's memory, token included), so a server opens one only in an authenticated,
// probed CreateTable. Calls on it run through the same handlers as over gRPC. A call that times
// out or is cancelled breaks the channel, since the server may still answer into the slot.
//
// Note [shared memory]: a trainer and a server on one host may share memory (docs/ps.md "Shared
// memory"). CreateTable carries the trainer's host identity and a probe region holding its key;
// the server answers `shared_memory` when its own identity is the same and it could map the probe
// and read the key. From then on tensors may travel as references (v1::SharedBytes) instead of
// bytes: a push's gradients lying in a shared tensor, when every server shares memory
// (push_reference), and a lookup's rows, which the server writes straight into a shared `out`
// (lookup_into). The server checks every reference (rpc/shared_memory.h).
//
// Note [shared rows]: a sync dense table's rows live in the server's own shared memory when a
// trainer that shares memory created it. CreateTable's answer and every Step answered over the
// trainer's call channel say where (never over gRPC: a server names its own memory only to a
// probed caller), and Client::server_rows views them, so DenseModel copies its parameters from
// there after step() instead of looking them up. Safe because the server applies the next step
// only once every trainer called Step for it, which a trainer does only after its pushes, after its
// forward, after it read the rows. Async tables change at any time: their pulls stay lookups.
//
// Thread safety: all methods may be called from several threads.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "batch_plan.h"
#include "gradwire/ps/client.h"
#include "rpc/shared_memory.h"
#include "transport.h"

namespace gradwire::ps {

// Room left in a batch's request and answer for the batch's own framing.
inline constexpr int64_t kBatchFraming = 1024;

class Routes {
 public:
  // Stubs for `options.servers`; `regions` (the client's shared tensors) must outlive this.
  Routes(const ClientOptions& options, rpc::SharedRegions& regions);

  int size() const { return static_cast<int>(addresses_.size()); }
  const std::vector<std::string>& addresses() const { return addresses_; }

  // What a CreateTable to `server` offers when shared memory is on: the probe (Note [shared
  // memory]) and this trainer's call channel to it (Note [call channels]), made on first use.
  void offer(int server, v1::CreateTableRequest& request);
  // The server's answer: whether it shares memory, and whether it serves the channel.
  void answered(int server, const v1::CreateTableResponse& response);

  // Starts `call` to `server` by its route (Note [call routes]): sets its address, stub and
  // transport; `grpc` is the transport of the caller's CallQueue.
  void start(int server, CallBase& call, const std::shared_ptr<GrpcTransport>& grpc) const;

  // How large a batch to `server` may be: the byte limits, and a channel's slot when the server
  // serves one.
  BatchLimits batch_limits(int server) const;

  bool shares_memory_with(int server) const;
  // "shared memory" or "grpc": how `server`'s batches travel now.
  std::string transport_name(int server) const;

  // Where a push's gradients lie, when they may travel as a reference: in a shared tensor, to
  // servers that all share memory (a push is cut among them before it is sent).
  std::optional<v1::SharedBytes> push_reference(const at::Tensor& grads) const;
  // Where `server` may write a lookup's float32 rows itself: `out` is a shared tensor and the
  // server shares memory.
  std::optional<v1::SharedBytes> lookup_into(int server, const at::Tensor& out) const;

 private:
  std::shared_ptr<ChannelTransport> usable_channel(int server) const;

  const std::vector<std::string> addresses_;
  const bool shared_memory_;
  const std::string host_identity_;
  const int64_t max_request_bytes_;
  const int64_t max_message_bytes_;
  rpc::SharedRegions& regions_;
  std::vector<std::unique_ptr<Stub>> stubs_;

  mutable std::mutex mutex_;       // guards shared_with_ and channels_
  std::vector<char> shared_with_;  // per server: it shares memory (CreateTable's answer)
  // Per server, this trainer's call channel (made by the first offer()); calls hold their
  // transport too, so a channel outlives the client while a call of it is in flight.
  std::vector<std::shared_ptr<ChannelTransport>> channels_;
};

}  // namespace gradwire::ps
