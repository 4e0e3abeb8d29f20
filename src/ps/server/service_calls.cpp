// The service's methods as gRPC and the call channels reach them (service.h): each runs its body
// (service.cpp, service_channels.cpp) and counts the call in the server's metrics: its method,
// transport, request and answer sizes, time and status (docs/observability.md).
#include <chrono>
#include <algorithm>
#include <optional>

#include "ps/messages/call_summary.h"
#include "ps/server/service.h"
#include "rpc/status.h"

namespace gradwire::ps {
namespace {

// Runs `body` and records the call: counted in `metrics` (the answer's size when it succeeded),
// and with a timeline a span on the serving thread (begin_served_span).
template <typename Request, typename Body>
grpc::Status counted_call(ServerMetrics& metrics, const ParameterServerService& service,
                          CallMethod method, CallTransport transport, const Request& request,
                          const google::protobuf::Message* response, Body&& body) {
  const auto start = std::chrono::steady_clock::now();
  const size_t request_bytes = request.ByteSizeLong();
  ServedSpan span;
  if (timeline::enabled()) {
    span.begin(*service.thread_name(), method, transport, summarize(request), request_bytes);
  }
  const grpc::Status status = body();
  const size_t answer_bytes = status.ok() && response != nullptr ? response->ByteSizeLong() : 0;
  metrics.call(method, transport, request_bytes, answer_bytes,
               std::chrono::steady_clock::now() - start, status.error_code());
  span.end(status, answer_bytes);
  return status;
}

}  // namespace

void ServedSpan::begin(std::string_view thread_name, CallMethod method, CallTransport transport,
                       const CallSummary& what, size_t request_bytes) {
  // Each thread's track is named once, at its first traced call (name_thread skips a repeat).
  timeline::name_thread(thread_name);
  method_ = method;
  transport_ = transport;
  request_bytes_ = static_cast<int64_t>(request_bytes);
  parts_ = what.parts;
  table_size_ = static_cast<uint8_t>(std::min(what.table.size(), sizeof table_));
  std::copy_n(what.table.data(), table_size_, table_);
  start_ns_ = timeline::now_ns();
}

void ServedSpan::end(const grpc::Status& status, size_t answer_bytes) {
  if (start_ns_ < 0) return;
  // "serve Batch", without snprintf's cost on every call.
  char name[32] = "serve ";
  const std::string_view label(method_label(method_));
  const size_t size = std::min(label.size(), sizeof name - 6);
  std::copy_n(label.begin(), size, name + 6);
  const std::string_view table(table_, table_size_);
  const char* transport = transport_label(transport_);
  const auto bytes_sent = static_cast<int64_t>(answer_bytes);
  // A failed call's span also names its status.
  const auto record = [&](auto... status_arg) {
    timeline::complete(std::string_view(name, 6 + size), "ps", start_ns_, timeline::now_ns(),
                       {{"table", table},
                        {"transport", transport},
                        {"bytes_received", request_bytes_},
                        {"parts", parts_},
                        {"bytes_sent", bytes_sent},
                        status_arg...});
  };
  if (status.ok()) {
    record();
  } else {
    record(timeline::Arg("status", rpc::status_code_name(status.error_code())));
  }
  start_ns_ = -1;
}

grpc::Status ParameterServerService::CreateTable(grpc::ServerContext* context,
                                                 const v1::CreateTableRequest* request,
                                                 v1::CreateTableResponse* response) {
  return counted_call(metrics_, *this, CallMethod::kCreateTable, CallTransport::kGrpc, *request,
                      response, [&] { return create_table(context, request, response); });
}

grpc::Status ParameterServerService::Checkpoint(grpc::ServerContext* context,
                                                const v1::CheckpointRequest* request,
                                                v1::CheckpointResponse* response) {
  return counted_call(metrics_, *this, CallMethod::kCheckpoint, CallTransport::kGrpc, *request,
                      response, [&] { return checkpoint(context, response); });
}

grpc::Status ParameterServerService::Resume(grpc::ServerContext* context,
                                            const v1::ResumeRequest* request,
                                            v1::ResumeResponse* response) {
  return counted_call(metrics_, *this, CallMethod::kResume, CallTransport::kGrpc, *request,
                      response, [&] { return resume(context, request, response); });
}

grpc::Status ParameterServerService::Assign(grpc::ServerContext* context,
                                            const v1::AssignRequest* request,
                                            v1::AssignResponse* response) {
  return counted_call(metrics_, *this, CallMethod::kAssign, CallTransport::kGrpc, *request,
                      response, [&] { return assign(context, request); });
}

grpc::Status ParameterServerService::Batch(grpc::ServerContext* context,
                                           const v1::BatchRequest* request,
                                           v1::BatchResponse* response) {
  return counted_call(metrics_, *this, CallMethod::kBatch, CallTransport::kGrpc, *request, response,
                      [&] { return batch_grpc(context, request, response); });
}

grpc::Status ParameterServerService::serve_channel_call(
    const rpc::ChannelCall& call, std::unique_ptr<google::protobuf::Message>* answer) {
  const auto start = std::chrono::steady_clock::now();
  ServedSpan span;  // begun once the request is parsed
  const grpc::Status status = serve_channel_batch(call, answer, span);
  const size_t answer_bytes = status.ok() && *answer ? (*answer)->ByteSizeLong() : 0;
  metrics_.call(CallMethod::kBatch, CallTransport::kChannel, call.request.size(), answer_bytes,
                std::chrono::steady_clock::now() - start, status.error_code());
  span.end(status, answer_bytes);
  return status;
}

}  // namespace gradwire::ps
