// The client's calls (internal to src/ps/client): the kinds of call and the methods they take
// (the route table below, Note [call routes] in routes.h), and small helpers shared by client.cpp
// and lookup_plan.cpp.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "client_queue.h"
#include "rpc/proto/ps.grpc.pb.h"

namespace gradwire::ps {

// The route table: per kind of call, its messages, its gRPC method, and its call-channel method
// (none: gRPC only). Lookups, pushes and steps all travel in batches (batch_plan.h); the other
// calls are rare and go over gRPC. Which transport a call takes is decided by Routes::start.
struct BatchRoute {
  using Request = v1::BatchRequest;
  using Response = v1::BatchResponse;
  static constexpr auto kGrpc = &Stub::PrepareAsyncBatch;
  static constexpr std::optional<rpc::ChannelMethod> kChannel = rpc::ChannelMethod::kBatch;
};
struct CreateRoute {
  using Request = v1::CreateTableRequest;
  using Response = v1::CreateTableResponse;
  static constexpr auto kGrpc = &Stub::PrepareAsyncCreateTable;
  static constexpr std::optional<rpc::ChannelMethod> kChannel = std::nullopt;
};
struct CheckpointRoute {
  using Request = v1::CheckpointRequest;
  using Response = v1::CheckpointResponse;
  static constexpr auto kGrpc = &Stub::PrepareAsyncCheckpoint;
  static constexpr std::optional<rpc::ChannelMethod> kChannel = std::nullopt;
};
struct ResumeRoute {
  using Request = v1::ResumeRequest;
  using Response = v1::ResumeResponse;
  static constexpr auto kGrpc = &Stub::PrepareAsyncResume;
  static constexpr std::optional<rpc::ChannelMethod> kChannel = std::nullopt;
};
struct AssignRoute {
  using Request = v1::AssignRequest;
  using Response = v1::AssignResponse;
  static constexpr auto kGrpc = &Stub::PrepareAsyncAssign;
  static constexpr std::optional<rpc::ChannelMethod> kChannel = std::nullopt;
};

using BatchCall = QueuedCall<BatchRoute>;
using CreateCall = QueuedCall<CreateRoute>;
using CheckpointCall = QueuedCall<CheckpointRoute>;
using ResumeCall = QueuedCall<ResumeRoute>;
using AssignCall = QueuedCall<AssignRoute>;

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
