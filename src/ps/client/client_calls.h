// The client's calls (internal to src/ps/client): the unary call types on the completion queue,
// the stub's PrepareAsync functions, and small helpers shared by client.cpp and lookup_plan.cpp.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "client_queue.h"
#include "rpc/proto/ps.grpc.pb.h"

namespace gradwire::ps {

using Stub = v1::ParameterServer::Stub;

// Lookups, pushes and steps all travel in batches (batch_plan.h).
using BatchCall = QueuedCall<v1::BatchRequest, v1::BatchResponse>;
using CreateCall = QueuedCall<v1::CreateTableRequest, v1::CreateTableResponse>;
using CheckpointCall = QueuedCall<v1::CheckpointRequest, v1::CheckpointResponse>;
using ResumeCall = QueuedCall<v1::ResumeRequest, v1::ResumeResponse>;
using AssignCall = QueuedCall<v1::AssignRequest, v1::AssignResponse>;

// The stub's PrepareAsync<Method> as the function CallQueue::start takes.
template <typename Request, typename Response>
auto prepare(Stub& stub, std::unique_ptr<grpc::ClientAsyncResponseReader<Response>> (Stub::*method)(
                             grpc::ClientContext*, const Request&, grpc::CompletionQueue*)) {
  return [&stub, method](grpc::ClientContext* context, const Request& request,
                         grpc::CompletionQueue* queue) {
    return (stub.*method)(context, request, queue);
  };
}
inline auto prepare_batch(Stub& stub) { return prepare(stub, &Stub::PrepareAsyncBatch); }
inline auto prepare_create(Stub& stub) { return prepare(stub, &Stub::PrepareAsyncCreateTable); }
inline auto prepare_checkpoint(Stub& stub) { return prepare(stub, &Stub::PrepareAsyncCheckpoint); }
inline auto prepare_resume(Stub& stub) { return prepare(stub, &Stub::PrepareAsyncResume); }
inline auto prepare_assign(Stub& stub) { return prepare(stub, &Stub::PrepareAsyncAssign); }

// Whether a call that failed UNAVAILABLE may be sent again: every call but a batch carrying pushes
// or steps (a push that reached the server would be applied twice).
template <typename Call>
bool retryable(const Call& /*call*/) {
  return true;
}
inline bool retryable(const BatchCall& call) {
  return call.request.pushes_size() == 0 && call.request.steps_size() == 0;
}

// Bytes of a request besides its tensors' data: the table name (at most 64 characters), the
// tensors' shapes and the small fields, with room to spare.
constexpr int64_t kRequestOverhead = 4096;

// Note [raw loops] (as in table_shard.cpp): a batch sends each server a few ids, so checking,
// deduplicating and routing loop over the ids directly instead of running a few dozen small ATen
// operations per call.

inline bool strictly_increasing(const at::Tensor& ids) {
  const int64_t* data = ids.data_ptr<int64_t>();
  for (int64_t i = 1; i < ids.numel(); ++i) {
    if (data[i] <= data[i - 1]) return false;
  }
  return true;
}

inline at::Tensor view_of(std::vector<int64_t>& values) {
  return at::from_blob(values.data(), {static_cast<int64_t>(values.size())}, at::kLong);
}

// Rows `positions` of the contiguous matrix `rows` (n x dim), as a new tensor of its dtype; the
// whole matrix itself when `positions` are all its rows in order.
at::Tensor gather_rows(const at::Tensor& rows, const std::vector<int64_t>& positions);
// The same rows written into `out` (contiguous, [positions, dim], rows' dtype): e.g. a tensor in
// a request's bytes (rpc::tensor_in_message), so no tensor lies between the rows and the wire.
void gather_rows_into(const at::Tensor& rows, const std::vector<int64_t>& positions,
                      const at::Tensor& out);

}  // namespace gradwire::ps
