// The service's Batch calls (service.h; Note [batched calls] in ps/client/batch_plan.h says what
// a client puts in them): the budget a batch is checked against before any part runs, and its
// parts run through the handlers of their kind.
#include <algorithm>
#include <cstdint>

#include "ps/messages/service_messages.h"
#include "ps/server/service.h"

namespace gradwire::ps {

// Note [batch budget]: a batch's parts run one after another in one call and its answer holds
// all their rows, so what one call may ask is bounded over all its parts, not per part: at most
// kMaxBatchParts parts, and the answers of its lookups (rows written into the trainer's memory
// excepted) at most max_message_bytes together (and a channel's slot over a channel). Checked
// before any part runs, so a refused batch changes nothing and builds nothing.
grpc::Status ParameterServerService::check_batch_budget(const CallInfo& call,
                                                        const v1::BatchRequest& request) const {
  const int64_t parts = int64_t{request.pushes_size()} + request.steps_size() +
                        request.lookups_size();
  if (parts > kMaxBatchParts) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "a batch of " + std::to_string(parts) + " parts (" +
                            std::to_string(request.pushes_size()) + " pushes, " +
                            std::to_string(request.steps_size()) + " steps, " +
                            std::to_string(request.lookups_size()) +
                            " lookups), above the most a server takes in one call, " +
                            std::to_string(kMaxBatchParts) + "; nothing was done");
  }
  int64_t limit = limits_.max_message_bytes;
  if (call.max_answer_bytes > 0) limit = std::min(limit, call.max_answer_bytes);
  int64_t answer = 0;
  for (const v1::LookupRequest& lookup : request.lookups()) {
    if (lookup.has_rows_into()) continue;
    const std::shared_ptr<TableShard> shard = tables_.find(lookup.table());
    if (!shard) continue;  // the part fails NOT_FOUND when it runs
    int64_t ids = 1;
    for (const int64_t size : lookup.ids().shape()) {
      if (size < 0 || (size > 0 && ids > INT64_MAX / size)) {
        ids = -1;
        break;
      }
      ids *= size;
    }
    if (ids < 0) continue;  // the part's decode refuses it
    const int wire = lookup.rows_dtype();
    const int64_t row_bytes =
        shard->config().dim * (wire == v1::FLOAT16 || wire == v1::BFLOAT16 ? 2 : 4);
    // Compared by division: ids x dim x 4 can overflow int64.
    if (row_bytes > 0 && ids > (limit - answer) / row_bytes) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "the lookups of a batch of " + std::to_string(request.lookups_size()) +
                              " need answers of more than " + std::to_string(limit) +
                              " bytes together (max_message_bytes " +
                              std::to_string(limits_.max_message_bytes) +
                              (call.max_answer_bytes > 0
                                   ? ", a call channel's slot " +
                                         std::to_string(call.max_answer_bytes)
                                   : std::string()) +
                              "); nothing was done: look up fewer ids per batch");
    }
    answer += ids * row_bytes;
  }
  return grpc::Status::OK;
}

// Note [batch parts]: lookups, pushes and steps reach the server only as parts of Batch calls
// (Note [batched calls] in ps/client/batch_plan.h). Each part runs through its own handler in a
// fixed order: pushes before the steps they belong to, lookups after the steps whose rows they
// read. A failed part ends the call; its status keeps its code and names the part.
grpc::Status ParameterServerService::batch(const CallInfo& call, const v1::BatchRequest& request,
                                           v1::BatchResponse* response) {
  metrics_.batch_parts(call.shares_memory ? CallTransport::kChannel : CallTransport::kGrpc,
                       request.lookups_size(), request.pushes_size(), request.steps_size());
  if (grpc::Status budget = check_batch_budget(call, request); !budget.ok()) return budget;
  const auto failed = [](const grpc::Status& status, const char* part, int index, int count,
                         const std::string& table) {
    return grpc::Status(status.error_code(), std::string(part) + " " + std::to_string(index + 1) +
                                                 " of " + std::to_string(count) + " (table " +
                                                 quoted_name(table) +
                                                 ") of a batch: " + status.error_message());
  };
  for (int i = 0; i < request.pushes_size(); ++i) {
    const grpc::Status status = push(request.pushes(i));
    if (!status.ok())
      return failed(status, "push", i, request.pushes_size(), request.pushes(i).table());
  }
  for (int i = 0; i < request.steps_size(); ++i) {
    const grpc::Status status = step(call, request.steps(i), response->add_steps());
    if (!status.ok())
      return failed(status, "step", i, request.steps_size(), request.steps(i).table());
  }
  for (int i = 0; i < request.lookups_size(); ++i) {
    const grpc::Status status = lookup(call, request.lookups(i), response->add_lookups());
    if (!status.ok()) {
      return failed(status, "lookup", i, request.lookups_size(), request.lookups(i).table());
    }
  }
  return grpc::Status::OK;
}

}  // namespace gradwire::ps
