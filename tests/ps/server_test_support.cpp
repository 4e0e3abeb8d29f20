#include "server_test_support.h"

#include <gtest/gtest.h>

#include "ps/messages/service_messages.h"
#include "rpc/wire.h"

namespace gradwire::ps::testing {

TableConfig table_config(const std::string& name, int64_t rows, int64_t dim, UpdateMode mode,
                         int num_trainers) {
  TableConfig config;
  config.name = name;
  config.num_rows = rows;
  config.dim = dim;
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.lr = 0.5;
  config.initializer.kind = InitializerKind::kNormal;
  config.initializer.seed = 7;
  config.mode = mode;
  config.num_trainers = num_trainers;
  return config;
}

ServerOptions test_server_options() {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.token = kToken;
  return options;
}

ServerClient::ServerClient(const std::string& address, std::string token,
                           rpc::ChannelOptions channel)
    : token_(std::move(token)),
      channel_(rpc::make_channel(address, channel)),
      stub_(v1::ParameterServer::NewStub(channel_)) {}

std::unique_ptr<grpc::ClientContext> ServerClient::context(
    std::chrono::milliseconds timeout) const {
  return rpc::make_context(token_, timeout);
}

grpc::Status ServerClient::create(const TableConfig& config, int server_index, int num_servers,
                                  v1::CreateTableResponse* response) {
  v1::CreateTableRequest request;
  *request.mutable_config() = to_message(config);
  request.set_server_index(server_index);
  request.set_num_servers(num_servers);
  v1::CreateTableResponse ignored;
  return stub_->CreateTable(context().get(), request, response ? response : &ignored);
}

grpc::Status ServerClient::create_probed(const TableConfig& config, const std::string& host,
                                         const v1::SharedBytes& probe,
                                         v1::CreateTableResponse* response,
                                         const v1::SharedBytes* channel) {
  v1::CreateTableRequest request;
  *request.mutable_config() = to_message(config);
  request.set_num_servers(1);
  request.set_host(host);
  *request.mutable_probe() = probe;
  if (channel != nullptr) *request.mutable_channel() = *channel;
  return stub_->CreateTable(context().get(), request, response);
}

grpc::Status ServerClient::lookup(const std::string& table, const at::Tensor& ids,
                                  at::Tensor* rows) {
  v1::LookupRequest request;
  request.set_table(table);
  rpc::encode_tensor(ids, request.mutable_ids(), "ids");
  v1::LookupResponse response;
  const grpc::Status status = lookup(request, &response);
  if (status.ok() && rows) *rows = rpc::decode_tensor(response.rows(), "rows", {at::kFloat, 2});
  return status;
}

v1::PushRequest push_request(const std::string& table, int trainer, int64_t step,
                             const at::Tensor& ids, const at::Tensor& grads, int64_t restart,
                             uint64_t incarnation) {
  v1::PushRequest request;
  request.set_table(table);
  request.set_trainer(trainer);
  request.set_step(step);
  rpc::encode_tensor(ids, request.mutable_ids(), "ids");
  rpc::encode_tensor(grads, request.mutable_grads(), "grads");
  request.mutable_attempt()->set_restart(restart);
  request.mutable_attempt()->set_incarnation(incarnation);
  return request;
}

grpc::Status ServerClient::push(const std::string& table, int trainer, int64_t step,
                                const at::Tensor& ids, const at::Tensor& grads) {
  return push(push_request(table, trainer, step, ids, grads));
}

grpc::Status ServerClient::lookup(const v1::LookupRequest& request, v1::LookupResponse* response,
                                  std::chrono::milliseconds timeout) {
  v1::BatchRequest batch;
  *batch.add_lookups() = request;
  v1::BatchResponse answer;
  const grpc::Status status = stub_->Batch(context(timeout).get(), batch, &answer);
  if (status.ok() && response != nullptr && answer.lookups_size() == 1) {
    *response = answer.lookups(0);
  }
  return status;
}

grpc::Status ServerClient::push(const v1::PushRequest& request, std::chrono::milliseconds timeout) {
  v1::BatchRequest batch;
  *batch.add_pushes() = request;
  v1::BatchResponse answer;
  return stub_->Batch(context(timeout).get(), batch, &answer);
}

grpc::Status ServerClient::step(const v1::StepRequest& request, v1::StepResponse* response,
                                std::chrono::milliseconds timeout) {
  v1::BatchRequest batch;
  *batch.add_steps() = request;
  v1::BatchResponse answer;
  const grpc::Status status = stub_->Batch(context(timeout).get(), batch, &answer);
  if (status.ok() && response != nullptr && answer.steps_size() == 1) *response = answer.steps(0);
  return status;
}

grpc::Status ServerClient::assign(const std::string& table, const at::Tensor& ids,
                                  const at::Tensor& rows) {
  v1::AssignRequest request;
  request.set_table(table);
  rpc::encode_tensor(ids, request.mutable_ids(), "ids");
  rpc::encode_tensor(rows, request.mutable_rows(), "rows");
  request.set_complete(true);
  v1::AssignResponse response;
  return stub_->Assign(context().get(), request, &response);
}

grpc::Status ServerClient::step(const std::string& table, int trainer, int64_t step,
                                std::chrono::milliseconds timeout, int64_t* new_step) {
  v1::StepRequest request;
  request.set_table(table);
  request.set_trainer(trainer);
  request.set_step(step);
  v1::StepResponse response;
  const grpc::Status status = this->step(request, &response, timeout);
  if (status.ok() && new_step) *new_step = response.step();
  return status;
}

grpc::Status ServerClient::checkpoint(std::vector<std::string>* files) {
  v1::CheckpointResponse response;
  const grpc::Status status =
      stub_->Checkpoint(context().get(), v1::CheckpointRequest(), &response);
  if (files) files->assign(response.files().begin(), response.files().end());
  return status;
}

grpc::Status ServerClient::resume(const std::string& table, int trainer, int64_t step,
                                  int64_t restart, int64_t* new_step) {
  v1::ResumeRequest request;
  request.set_table(table);
  request.set_trainer(trainer);
  request.set_step(step);
  request.mutable_attempt()->set_restart(restart);
  v1::ResumeResponse response;
  const grpc::Status status = stub_->Resume(context().get(), request, &response);
  if (status.ok() && new_step) *new_step = response.step();
  return status;
}

at::Tensor ServerClient::rows(const std::string& table, const at::Tensor& ids) {
  at::Tensor rows;
  const grpc::Status status = lookup(table, ids, &rows);
  if (!status.ok())
    ADD_FAILURE() << "lookup of '" << table << "' failed: " << status.error_message();
  return rows;
}

}  // namespace gradwire::ps::testing
