// The bare gRPC floor `gradwire-bench rpc` compares the parameter server with: a service
// (bench/proto/echo.proto) that answers a payload with another of the size asked for, served as
// gradwire-ps-server serves (gRPC's sync server, one completion queue, plaintext) and called as
// gradwire's client calls (a PrepareAsync call on a completion queue, with a deadline). No token,
// no tables, no work on either side.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>

namespace gradwire::bench {

// Listens on 127.0.0.1 at a free port until destroyed. Throws BackendError when it cannot.
class EchoServer {
 public:
  EchoServer();
  ~EchoServer();
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

  std::string address() const { return address_; }

 private:
  class Service;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

// Calls an EchoServer. Not thread-safe: one call at a time.
class EchoClient {
 public:
  explicit EchoClient(const std::string& address);
  ~EchoClient();
  EchoClient(const EchoClient&) = delete;
  EchoClient& operator=(const EchoClient&) = delete;

  // One call carrying `request_bytes` bytes and answered with `response_bytes`. Blocks; throws
  // BackendError when the call fails.
  void call(std::uint64_t request_bytes, std::uint64_t response_bytes);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gradwire::bench
