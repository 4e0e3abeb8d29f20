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
  std::optional<timeline::Span> span;
  if (timeline::enabled()) {
    begin_served_span(span, *service.thread_name(), method, transport, summarize(request),
                      request_bytes);
  }
  const grpc::Status status = body();
  const size_t answer_bytes = status.ok() && response != nullptr ? response->ByteSizeLong() : 0;
  metrics.call(method, transport, request_bytes, answer_bytes,
               std::chrono::steady_clock::now() - start, status.error_code());
  if (span) end_served_span(*span, status, answer_bytes);
  return status;
}

}  // namespace

void begin_served_span(std::optional<timeline::Span>& span, const std::string& thread_name,
                       CallMethod method, CallTransport transport, const CallSummary& what,
                       size_t request_bytes) {
  // Each thread's track is named once, after its first traced call: a gRPC handler thread after
  // its server, a channel thread (the process's, serving every server in it) as such.
  thread_local std::string named;
  const std::string_view name =
      transport == CallTransport::kChannel ? std::string_view("ps channel calls") : thread_name;
  if (named != name) {
    timeline::name_thread(name);
    named = name;
  }
  // "serve Batch", without snprintf's cost on every call.
  char span_name[32] = "serve ";
  const std::string_view label(method_label(method));
  const size_t size = std::min(label.size(), sizeof span_name - 6);
  std::copy_n(label.begin(), size, span_name + 6);
  span.emplace(std::string_view(span_name, 6 + size), "ps",
               timeline::Args{{"table", what.table},
                              {"transport", transport_label(transport)},
                              {"bytes_received", static_cast<int64_t>(request_bytes)},
                              {"parts", what.parts}});
}

void end_served_span(timeline::Span& span, const grpc::Status& status, size_t answer_bytes) {
  span.arg({"bytes_sent", static_cast<int64_t>(answer_bytes)});
  if (!status.ok()) span.arg({"status", rpc::status_code_name(status.error_code())});
  span.end();
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
  std::optional<timeline::Span> span;  // begun once the request is parsed
  const grpc::Status status = serve_channel_batch(call, answer, span);
  const size_t answer_bytes = status.ok() && *answer ? (*answer)->ByteSizeLong() : 0;
  metrics_.call(CallMethod::kBatch, CallTransport::kChannel, call.request.size(), answer_bytes,
                std::chrono::steady_clock::now() - start, status.error_code());
  if (span) end_served_span(*span, status, answer_bytes);
  return status;
}

}  // namespace gradwire::ps
