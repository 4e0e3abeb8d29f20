// The gRPC handlers of the parameter-server service (server-internal; docs/ps.md "Server").
//
// Every method checks the job token first (UNAUTHENTICATED otherwise), decodes its tensors with
// rpc/wire.h and maps failures to statuses: malformed input, bad ids or shapes -> INVALID_ARGUMENT
// (the table is unchanged), unknown table -> NOT_FOUND, a configured limit (ServiceLimits,
// TableRegistry's, a shard's pending bytes) or an oversize answer -> RESOURCE_EXHAUSTED naming
// the limit and the flag that raises it, a sync step some trainers did not finish in time ->
// DEADLINE_EXCEEDED naming them, a call of a replaced attempt or trainer process -> ABORTED,
// Checkpoint without a directory or Resume at a step with no checkpoint -> FAILED_PRECONDITION.
// No exception leaves a handler. Names from requests appear in messages cut to 64 characters.
//
// Thread safety: handlers run on gRPC's sync-server threads and on the channel hub's threads (one
// per trainer that calls over shared memory, more while calls block), any number at once; the
// service itself holds an atomic count of the steps waiting and the channels under a mutex
// (TableRegistry and ServerCheckpoints lock their own state). Blocking: a Batch's step blocks its
// thread until the step is applied or the call's deadline (capped at kMaxStepWait) is near;
// CreateTable initialises rows; Checkpoint writes files. Lookups, pushes and steps come only as
// parts of Batch calls, over gRPC or a call channel (Note [call routes] in ps/client/routes.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "gradwire/common/timeline.h"
#include "ps/messages/call_summary.h"
#include "ps/server/server_checkpoints.h"
#include "ps/server/server_metrics.h"
#include "ps/server/table_registry.h"
#include "rpc/call_channel.h"
#include "rpc/proto/ps.grpc.pb.h"
#include "rpc/shared_memory.h"

namespace gradwire::ps {

// Longest a Step call waits for the other trainers, whatever its deadline says.
inline constexpr std::chrono::seconds kMaxStepWait{300};

// The service's share of ServerOptions' limits (documented there).
struct ServiceLimits {
  int64_t max_message_bytes = int64_t{64} << 20;
  int64_t max_table_bytes = int64_t{8} << 30;
  int64_t max_trainers = 1024;
  int64_t max_waiting_steps = 1024;  // Note [waiting steps] in service.cpp
  rpc::SharedRegionLimits shared;    // what trainers' shared memory may map (rpc/shared_memory.h)
};

// When a Step call stops waiting: the call's deadline, capped at kMaxStepWait from now, less a
// margin (a tenth of the time left, at most 200 ms) so that the answer naming the missing
// trainers reaches the caller before its own deadline fires.
std::chrono::steady_clock::time_point step_wait_deadline(
    std::chrono::system_clock::time_point call_deadline,
    std::chrono::system_clock::time_point system_now,
    std::chrono::steady_clock::time_point steady_now);

// "step 12 of table 'emb': trainer(s) 1 of 2 did not finish it within 5.00 s"; at most 16
// trainers by number, then "and N more".
std::string describe_missing_trainers(const std::string& table, int64_t step,
                                      const std::vector<int>& missing, int num_trainers,
                                      std::chrono::milliseconds waited);

// What a handler needs of its call besides the messages: gRPC's context, or a call that came over
// a shared-memory channel (rpc/call_channel.h).
struct CallInfo {
  std::chrono::system_clock::time_point deadline;
  std::function<bool()> cancelled;  // the caller went away or the server stops
  // Called before the handler blocks for long (rpc::ChannelCall::will_wait); empty for gRPC.
  std::function<void()> will_wait;
  // The largest answer the call can carry back besides max_message_bytes (a channel's slot); 0:
  // none.
  int64_t max_answer_bytes = 0;
  // The caller passed the shared-memory probe: the call came over its call channel, which only a
  // probed CreateTable opens (Note [call channels] in ps/client/routes.h). Only such calls are
  // told where the server's own rows are (Note [shared rows], there too).
  bool shares_memory = false;
};

// Most parts (pushes, steps and lookups together) one Batch call may have (Note [batch budget]).
inline constexpr int kMaxBatchParts = 4096;

// Most channels a server serves at once (one per trainer process and client); beyond that,
// trainers call over gRPC.
inline constexpr size_t kMaxChannels = 1024;

// A served call on the timeline (service_calls.cpp; docs/timeline.md): "serve <Method>" on the
// serving thread from begin() to end(), with args table, transport, bytes_received, parts,
// bytes_sent and, for a failed call, its status. It is recorded as one complete event when it
// ends (nothing at its start: the serving thread's cost stays small). begin() names the thread's
// track `thread_name` once (a gRPC handler thread after its server; a channel thread, which
// serves every server of the process, kChannelThreadName). Call begin() only when
// timeline::enabled(); end() does nothing unless begun.
class ServedSpan {
 public:
  static constexpr std::string_view kChannelThreadName = "ps channel calls";

  void begin(std::string_view thread_name, CallMethod method, CallTransport transport,
             const CallSummary& what, size_t request_bytes);
  void end(const grpc::Status& status, size_t answer_bytes);

 private:
  int64_t start_ns_ = -1;  // -1: not begun
  CallMethod method_ = CallMethod::kBatch;
  CallTransport transport_ = CallTransport::kGrpc;
  int64_t request_bytes_ = 0;
  int parts_ = 0;
  uint8_t table_size_ = 0;
  char table_[64];  // the table named (cut): the request may be gone by end()
};

class ParameterServerService final : public v1::ParameterServer::Service {
 public:
  // `tables`, `checkpoints`, `hub` and `metrics` must outlive the service. `shared_host`: this
  // server's host identity, where trainers of that host may share memory with it; empty: they may
  // not. `hub` serves the trainers' call channels (shared by the servers of one process). Every
  // call is counted in `metrics` (its method, transport, sizes, time and status:
  // service_calls.cpp). `thread_name` names the tracks of its handler threads on the timeline
  // ("ps server 1 calls": ServerOptions::timeline_name; set_thread_name changes it).
  ParameterServerService(std::string token, ServiceLimits limits, std::string shared_host,
                         TableRegistry& tables, ServerCheckpoints& checkpoints,
                         rpc::ChannelHub& hub, ServerMetrics& metrics,
                         std::string thread_name = "ps server");

  grpc::Status CreateTable(grpc::ServerContext* context, const v1::CreateTableRequest* request,
                           v1::CreateTableResponse* response) override;
  grpc::Status Checkpoint(grpc::ServerContext* context, const v1::CheckpointRequest* request,
                          v1::CheckpointResponse* response) override;
  grpc::Status Resume(grpc::ServerContext* context, const v1::ResumeRequest* request,
                      v1::ResumeResponse* response) override;
  grpc::Status Assign(grpc::ServerContext* context, const v1::AssignRequest* request,
                      v1::AssignResponse* response) override;
  grpc::Status Batch(grpc::ServerContext* context, const v1::BatchRequest* request,
                     v1::BatchResponse* response) override;

  // A Batch that came over a trainer's call channel (opened by its authenticated CreateTable):
  // parsed and run as over gRPC, the answer in *answer; any other method is INVALID_ARGUMENT.
  grpc::Status serve_channel_call(const rpc::ChannelCall& call,
                                  std::unique_ptr<google::protobuf::Message>* answer);
  // The server stops: every call waiting (a Step for other trainers, a lookup for a table's values)
  // ends at once, CANCELLED, since no call that could end its wait can arrive any more; calls that
  // do not wait finish. Call before gRPC's shutdown, so the grace is not spent waiting.
  void begin_stop() { stopping_.store(true); }
  // Waits until no gRPC handler runs, or `until`; whether none runs. Note [quick shutdown] in
  // server.cpp.
  bool wait_for_calls(std::chrono::steady_clock::time_point until) const;
  // Stops serving every channel (a Step waiting in one is cancelled). Call after gRPC's shutdown.
  void stop_channels();
  // Channels served now.
  int channels() const;
  // The name of the handler threads' tracks on the timeline (the server sets it again once its
  // port is known). Thread-safe.
  void set_thread_name(std::string name) {
    std::atomic_store(&thread_name_, std::make_shared<const std::string>(std::move(name)));
  }
  std::shared_ptr<const std::string> thread_name() const { return std::atomic_load(&thread_name_); }
  // Calls waiting now (Step parts in a barrier, lookups for a dense table's values).
  int64_t waiting_calls() const { return waiting_steps_.load(); }

 private:
  // The gRPC methods' bodies, which the methods above run and count in metrics_
  // (service_calls.cpp).
  grpc::Status create_table(grpc::ServerContext* context, const v1::CreateTableRequest* request,
                            v1::CreateTableResponse* response);
  grpc::Status checkpoint(grpc::ServerContext* context, v1::CheckpointResponse* response);
  grpc::Status resume(grpc::ServerContext* context, const v1::ResumeRequest* request,
                      v1::ResumeResponse* response);
  grpc::Status assign(grpc::ServerContext* context, const v1::AssignRequest* request);
  grpc::Status batch_grpc(grpc::ServerContext* context, const v1::BatchRequest* request,
                          v1::BatchResponse* response);
  // The body of serve_channel_call (service_channels.cpp).
  // `span` begins once the request parsed, when a timeline runs.
  grpc::Status serve_channel_batch(const rpc::ChannelCall& call,
                                   std::unique_ptr<google::protobuf::Message>* answer,
                                   ServedSpan& span);
  // The handlers of a Batch's parts (Note [batch parts] in service_batch.cpp).
  grpc::Status lookup(const CallInfo& call, const v1::LookupRequest& request,
                      v1::LookupResponse* response);
  grpc::Status push(const v1::PushRequest& request);
  grpc::Status step(const CallInfo& call, const v1::StepRequest& request,
                    v1::StepResponse* response);
  // The parts of a Batch in order (pushes, steps, lookups) through the handlers above.
  grpc::Status batch(const CallInfo& call, const v1::BatchRequest& request,
                     v1::BatchResponse* response);
  // Serves the channel `ref` names unless it is served already; false when it cannot (not
  // mappable, or kMaxChannels served).
  bool open_channel(const v1::SharedBytes& ref);

  // The shard of `name`, or nullptr with *status set to NOT_FOUND.
  std::shared_ptr<TableShard> find_table(const std::string& name, grpc::Status* status) const;
  // The regions of trainers on this host, or nullptr when this server shares no memory.
  rpc::SharedRegionCache* shared();
  // RESOURCE_EXHAUSTED when `request` passes the batch budget (Note [batch budget]).
  grpc::Status check_batch_budget(const CallInfo& call, const v1::BatchRequest& request) const;
  // Where `shard`'s rows are in this server's shared memory, when they are there.
  std::optional<v1::SharedBytes> shared_rows(const TableShard& shard) const;

  const std::string token_;
  // The handler threads' tracks' name: read and written with std::atomic_load / atomic_store.
  std::shared_ptr<const std::string> thread_name_;
  const ServiceLimits limits_;
  const std::string shared_host_;
  rpc::SharedRegions own_{/*server_memory=*/true};  // sync dense tables' rows (Note [shared rows])
  rpc::SharedRegionCache shared_;  // regions of trainers on this host (rpc/shared_memory.h)
  TableRegistry& tables_;
  ServerCheckpoints& checkpoints_;
  rpc::ChannelHub& hub_;
  ServerMetrics& metrics_;
  std::atomic<int64_t> waiting_steps_{0};  // Step calls waiting in a barrier now
  std::atomic<bool> stopping_{false};      // begin_stop() was called
  std::atomic<int> running_calls_{0};      // gRPC handlers running now (RunningCall)

  mutable std::mutex channels_mutex_;  // guards channels_ and channels_stopped_
  bool channels_stopped_ = false;
  // By region key; the last member, so they are stopped before anything their calls use goes.
  std::map<uint64_t, std::unique_ptr<rpc::ChannelServer>> channels_;
};

}  // namespace gradwire::ps
