// The service's methods as gRPC and the call channels reach them (service.h): each runs its body
// (service.cpp, service_channels.cpp) and counts the call in the server's metrics: its method,
// transport, request and answer sizes, time and status (docs/observability.md).
#include <chrono>

#include "ps/server/service.h"

namespace gradwire::ps {
namespace {

// Runs `body` and records the call; the answer's size is counted when it succeeded.
template <typename Body>
grpc::Status counted_call(ServerMetrics& metrics, CallMethod method, CallTransport transport,
                          size_t request_bytes, const google::protobuf::Message* response,
                          Body&& body) {
  const auto start = std::chrono::steady_clock::now();
  const grpc::Status status = body();
  const size_t answer_bytes = status.ok() && response != nullptr ? response->ByteSizeLong() : 0;
  metrics.call(method, transport, request_bytes, answer_bytes,
               std::chrono::steady_clock::now() - start, status.error_code());
  return status;
}

}  // namespace

grpc::Status ParameterServerService::CreateTable(grpc::ServerContext* context,
                                                 const v1::CreateTableRequest* request,
                                                 v1::CreateTableResponse* response) {
  return counted_call(metrics_, CallMethod::kCreateTable, CallTransport::kGrpc,
                      request->ByteSizeLong(), response,
                      [&] { return create_table(context, request, response); });
}

grpc::Status ParameterServerService::Checkpoint(grpc::ServerContext* context,
                                                const v1::CheckpointRequest* request,
                                                v1::CheckpointResponse* response) {
  return counted_call(metrics_, CallMethod::kCheckpoint, CallTransport::kGrpc,
                      request->ByteSizeLong(), response,
                      [&] { return checkpoint(context, response); });
}

grpc::Status ParameterServerService::Resume(grpc::ServerContext* context,
                                            const v1::ResumeRequest* request,
                                            v1::ResumeResponse* response) {
  return counted_call(metrics_, CallMethod::kResume, CallTransport::kGrpc, request->ByteSizeLong(),
                      response, [&] { return resume(context, request, response); });
}

grpc::Status ParameterServerService::Assign(grpc::ServerContext* context,
                                            const v1::AssignRequest* request,
                                            v1::AssignResponse* response) {
  return counted_call(metrics_, CallMethod::kAssign, CallTransport::kGrpc, request->ByteSizeLong(),
                      response, [&] { return assign(context, request); });
}

grpc::Status ParameterServerService::Batch(grpc::ServerContext* context,
                                           const v1::BatchRequest* request,
                                           v1::BatchResponse* response) {
  return counted_call(metrics_, CallMethod::kBatch, CallTransport::kGrpc, request->ByteSizeLong(),
                      response, [&] { return batch_grpc(context, request, response); });
}

grpc::Status ParameterServerService::serve_channel_call(
    const rpc::ChannelCall& call, std::unique_ptr<google::protobuf::Message>* answer) {
  const auto start = std::chrono::steady_clock::now();
  const grpc::Status status = serve_channel_batch(call, answer);
  const size_t answer_bytes = status.ok() && *answer ? (*answer)->ByteSizeLong() : 0;
  metrics_.call(CallMethod::kBatch, CallTransport::kChannel, call.request.size(), answer_bytes,
                std::chrono::steady_clock::now() - start, status.error_code());
  return status;
}

}  // namespace gradwire::ps
