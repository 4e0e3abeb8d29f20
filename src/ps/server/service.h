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
// Thread safety: handlers run on gRPC's sync-server threads, any number at once; the service
// itself holds only an atomic count of the Step calls waiting (TableRegistry and
// ServerCheckpoints lock their own state). Blocking: Step blocks its thread until the step is
// applied or the call's deadline (capped at kMaxStepWait) is near; CreateTable initialises rows;
// Checkpoint writes files.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "ps/server/server_checkpoints.h"
#include "ps/server/table_registry.h"
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

class ParameterServerService final : public v1::ParameterServer::Service {
 public:
  // `tables` and `checkpoints` must outlive the service. `shared_host`: this server's host
  // identity, where trainers of that host may share memory with it; empty: they may not.
  ParameterServerService(std::string token, ServiceLimits limits, std::string shared_host,
                         TableRegistry& tables, ServerCheckpoints& checkpoints);

  grpc::Status CreateTable(grpc::ServerContext* context, const v1::CreateTableRequest* request,
                           v1::CreateTableResponse* response) override;
  grpc::Status Lookup(grpc::ServerContext* context, const v1::LookupRequest* request,
                      v1::LookupResponse* response) override;
  grpc::Status Push(grpc::ServerContext* context, const v1::PushRequest* request,
                    v1::PushResponse* response) override;
  grpc::Status Step(grpc::ServerContext* context, const v1::StepRequest* request,
                    v1::StepResponse* response) override;
  grpc::Status Checkpoint(grpc::ServerContext* context, const v1::CheckpointRequest* request,
                          v1::CheckpointResponse* response) override;
  grpc::Status Resume(grpc::ServerContext* context, const v1::ResumeRequest* request,
                      v1::ResumeResponse* response) override;
  grpc::Status Assign(grpc::ServerContext* context, const v1::AssignRequest* request,
                      v1::AssignResponse* response) override;

 private:
  // The shard of `name`, or nullptr with *status set to NOT_FOUND.
  std::shared_ptr<TableShard> find_table(const std::string& name, grpc::Status* status) const;
  // The regions of trainers on this host, or nullptr when this server shares no memory.
  rpc::SharedRegionCache* shared();
  // Where `shard`'s rows are in this server's shared memory, when they are there.
  std::optional<v1::SharedBytes> shared_rows(const TableShard& shard) const;

  const std::string token_;
  const ServiceLimits limits_;
  const std::string shared_host_;
  rpc::SharedRegionCache shared_;  // regions of trainers on this host (rpc/shared_memory.h)
  rpc::SharedRegions own_;         // this server's: sync dense tables' rows (Note [shared rows])
  TableRegistry& tables_;
  ServerCheckpoints& checkpoints_;
  std::atomic<int64_t> waiting_steps_{0};  // Step calls waiting in a barrier now
};

}  // namespace gradwire::ps
