#include "cases/rpc_echo.h"

#include <chrono>
#include <map>
#include <mutex>

#include "gradwire/common/error.h"
#include "proto/echo.grpc.pb.h"

namespace gradwire::bench {

namespace {

// Deadline of each echo call: gradwire's client sets one on every call too.
constexpr std::chrono::seconds kCallDeadline{30};
// Idle pollers the server keeps, as gradwire-ps-server does (Note [idle pollers] there).
constexpr int kIdlePollers = 16;

}  // namespace

class EchoServer::Service final : public v1::Echo::Service {
 public:
  grpc::Status Call(grpc::ServerContext*, const v1::EchoRequest* request,
                    v1::EchoResponse* response) override {
    response->set_payload(zeros(request->response_bytes()));
    return grpc::Status::OK;
  }

 private:
  // `bytes` zero bytes, made once per size (the sizes are few).
  const std::string& zeros(std::uint64_t bytes) {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto found = zeros_.find(bytes);
    if (found == zeros_.end()) found = zeros_.emplace(bytes, std::string(bytes, '\0')).first;
    return found->second;  // map nodes stay put
  }

  std::mutex mutex_;
  std::map<std::uint64_t, std::string> zeros_;  // guarded by mutex_; entries never change
};

EchoServer::EchoServer() : service_(std::make_unique<Service>()) {
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service_.get());
  // The parameter server's sync-server settings (src/ps/server/server.cpp).
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, kIdlePollers);
  server_ = builder.BuildAndStart();
  if (!server_ || port <= 0) {
    throw BackendError("gradwire-bench rpc: the echo server cannot listen on 127.0.0.1");
  }
  address_ = "127.0.0.1:" + std::to_string(port);
}

EchoServer::~EchoServer() {
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

class EchoClient::Impl {
 public:
  explicit Impl(const std::string& address)
      : stub_(v1::Echo::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {
  }
  ~Impl() {
    queue_.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (queue_.Next(&tag, &ok)) {
    }
  }

  void call(std::uint64_t request_bytes, std::uint64_t response_bytes) {
    if (request_.payload().size() != request_bytes)
      request_.set_payload(std::string(request_bytes, '\0'));
    request_.set_response_bytes(response_bytes);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    v1::EchoResponse response;
    grpc::Status status;
    const auto rpc = stub_->PrepareAsyncCall(&context, request_, &queue_);
    rpc->StartCall();
    rpc->Finish(&response, &status, this);
    void* tag = nullptr;
    bool ok = false;
    if (!queue_.Next(&tag, &ok) || !ok || !status.ok() ||
        response.payload().size() != response_bytes) {
      throw BackendError("gradwire-bench rpc: the echo call failed: " + status.error_message());
    }
  }

 private:
  std::unique_ptr<v1::Echo::Stub> stub_;
  grpc::CompletionQueue queue_;
  v1::EchoRequest request_;
};

EchoClient::EchoClient(const std::string& address) : impl_(std::make_unique<Impl>(address)) {}
EchoClient::~EchoClient() = default;

void EchoClient::call(std::uint64_t request_bytes, std::uint64_t response_bytes) {
  impl_->call(request_bytes, response_bytes);
}

}  // namespace gradwire::bench
