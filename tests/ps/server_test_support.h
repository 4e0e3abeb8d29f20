// Helpers for the parameter-server tests: small table configs, an in-process server with its
// generated stub, and the calls made with the job token and a bounded deadline. Lookups, pushes
// and steps go as the one part of a Batch call, the only way they reach a server (docs/ps.md
// "Routes"); a failed part's message starts "lookup 1 of 1 (table 'emb') of a batch: ".
#pragma once

#include <ATen/ATen.h>
#include <grpcpp/channel.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gradwire/ps/server.h"
#include "gradwire/ps/table.h"
#include "id_tensors.h"
#include "rpc/channel.h"
#include "rpc/proto/ps.grpc.pb.h"

namespace gradwire::ps::testing {

using namespace std::chrono_literals;

inline constexpr char kToken[] = "server-test-token";

// A name x rows x dim table: SGD lr 0.5, normal rows (seed 7), one trainer, async.
TableConfig table_config(const std::string& name = "emb", int64_t rows = 10, int64_t dim = 4,
                         UpdateMode mode = UpdateMode::kAsync, int num_trainers = 1);

// A Push of `grads` for `ids` by `trainer` at `step`, of attempt (`restart`, `incarnation`).
v1::PushRequest push_request(const std::string& table, int trainer, int64_t step,
                             const at::Tensor& ids, const at::Tensor& grads, int64_t restart = 0,
                             uint64_t incarnation = 0);

// A client of one server: every call carries `token` and a deadline of `timeout`.
class ServerClient {
 public:
  ServerClient(const std::string& address, std::string token = kToken,
               rpc::ChannelOptions channel = {});

  v1::ParameterServer::Stub& stub() { return *stub_; }
  // A context with the token and a deadline `timeout` from now.
  std::unique_ptr<grpc::ClientContext> context(std::chrono::milliseconds timeout = 10s) const;

  grpc::Status create(const TableConfig& config, int server_index = 0, int num_servers = 1,
                      v1::CreateTableResponse* response = nullptr);
  // CreateTable (one server) as a trainer of host identity `host` that sends `probe` and, when
  // given, asks for the call channel `channel` (what src/ps/client/client.cpp sends).
  grpc::Status create_probed(const TableConfig& config, const std::string& host,
                             const v1::SharedBytes& probe, v1::CreateTableResponse* response,
                             const v1::SharedBytes* channel = nullptr);
  grpc::Status lookup(const std::string& table, const at::Tensor& ids, at::Tensor* rows);
  grpc::Status push(const std::string& table, int trainer, int64_t step, const at::Tensor& ids,
                    const at::Tensor& grads);
  // Assign of `rows` to `ids`, completing the table's values (a dense table's lookups wait for it).
  grpc::Status assign(const std::string& table, const at::Tensor& ids, const at::Tensor& rows);
  grpc::Status step(const std::string& table, int trainer, int64_t step,
                    std::chrono::milliseconds timeout = 10s, int64_t* new_step = nullptr);
  grpc::Status checkpoint(std::vector<std::string>* files = nullptr);
  // Any request of a lookup, push or step, as a Batch of that one part; `response` (may be null)
  // gets the part's answer.
  grpc::Status lookup(const v1::LookupRequest& request, v1::LookupResponse* response,
                      std::chrono::milliseconds timeout = 10s);
  grpc::Status push(const v1::PushRequest& request, std::chrono::milliseconds timeout = 10s);
  grpc::Status step(const v1::StepRequest& request, v1::StepResponse* response,
                    std::chrono::milliseconds timeout = 10s);
  // Resume of `table` at `step` by `trainer` of attempt `restart` (incarnation 0).
  grpc::Status resume(const std::string& table, int trainer, int64_t step, int64_t restart = 0,
                      int64_t* new_step = nullptr);

  // lookup() that must succeed (ADD_FAILURE and an undefined tensor otherwise).
  at::Tensor rows(const std::string& table, const at::Tensor& ids);

 private:
  std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ParameterServer::Stub> stub_;
};

// ServerOptions for a test server: loopback port 0 and kToken.
ServerOptions test_server_options();

}  // namespace gradwire::ps::testing
