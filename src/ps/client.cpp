// The parameter-server client (include/gradwire/ps/client.h): one channel and stub per server,
// calls to several servers in parallel on gRPC's callback API, pushes kept in flight until
// flush() or step().
#include "gradwire/ps/client.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

#include "gradwire/common/env.h"
#include "gradwire/common/error.h"
#include "ps/client_calls.h"
#include "ps/coalesce.h"
#include "ps/id_routing.h"
#include "ps/service_messages.h"
#include "rpc/auth.h"
#include "rpc/channel.h"
#include "rpc/proto/ps.grpc.pb.h"
#include "rpc/retry.h"
#include "rpc/status.h"
#include "rpc/wire.h"

namespace gradwire::ps {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using Stub = v1::ParameterServer::Stub;

using LookupCall = PendingCall<v1::LookupRequest, v1::LookupResponse>;
using PushCall = PendingCall<v1::PushRequest, v1::PushResponse>;
using StepCall = PendingCall<v1::StepRequest, v1::StepResponse>;
using CreateCall = PendingCall<v1::CreateTableRequest, v1::CreateTableResponse>;
using CheckpointCall = PendingCall<v1::CheckpointRequest, v1::CheckpointResponse>;

// gRPC completes a call by its deadline; waiting this much longer only guards against a bug.
constexpr milliseconds kCompletionMargin{5000};

std::vector<std::string> split_addresses(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int env_int_or(const EnvMap& env, const char* name, int fallback) {
  const std::optional<long> value = env.get_int(name);
  return value ? static_cast<int>(*value) : fallback;
}

std::string table_op(const char* verb, const std::string& table) {
  return std::string(verb) + " of table '" + table + "'";
}

class ClientImpl final : public Client {
 public:
  explicit ClientImpl(const ClientOptions& options) : options_(options) {
    const EnvMap env = EnvMap::from_process();
    addresses_ = options.servers;
    if (addresses_.empty()) {
      addresses_ = split_addresses(env.get("GRADWIRE_PS_ADDRS").value_or(""));
    }
    if (addresses_.empty()) {
      throw ConfigError(
          "gradwire: no parameter servers: ClientOptions::servers is empty and GRADWIRE_PS_ADDRS "
          "is unset. Start the job with gradwire-run --servers S, or list the servers' "
          "HOST:PORT addresses in GRADWIRE_PS_ADDRS (comma-separated).");
    }
    token_ = rpc::load_token(options.token, options.token_file, env);
    trainer_rank_ = options.trainer_rank >= 0 ? options.trainer_rank : env_int_or(env, "RANK", 0);
    num_trainers_ =
        options.num_trainers >= 0 ? options.num_trainers : env_int_or(env, "WORLD_SIZE", 1);
    step_timeout_ = options.step_timeout;
    if (step_timeout_.count() <= 0) {
      const std::optional<std::string> text = env.get("GRADWIRE_TIMEOUT");
      step_timeout_ = text ? parse_duration(*text, "GRADWIRE_TIMEOUT") : milliseconds(300000);
    }
    retry_.max_retries = options.max_retries;
    retry_.initial_backoff = options.retry_backoff;
    rpc::ChannelOptions channel;
    channel.tls_root_cert_file = options.tls_root_cert_file;
    channel.max_message_bytes = options.max_message_bytes;
    for (const std::string& address : addresses_) {
      stubs_.push_back(v1::ParameterServer::NewStub(rpc::make_channel(address, channel)));
    }
  }

  ~ClientImpl() override {
    // Pushes still in flight hold their own state; wait so none outlives the stubs.
    std::vector<std::shared_ptr<PushCall>> pushes = take_pushes();
    for (auto& call : pushes) call->wait(Clock::now() + options_.call_deadline + kCompletionMargin);
  }

  int num_servers() const override { return static_cast<int>(addresses_.size()); }
  const std::vector<std::string>& servers() const override { return addresses_; }
  int trainer_rank() const override { return trainer_rank_; }
  int num_trainers() const override { return num_trainers_; }

  void create_table(const TableConfig& config) override {
    validate(config);
    std::vector<std::shared_ptr<CreateCall>> calls;
    for (int server = 0; server < num_servers(); ++server) {
      auto call = std::make_shared<CreateCall>();
      *call->request.mutable_config() = to_message(config);
      call->request.set_server_index(server);
      call->request.set_num_servers(num_servers());
      calls.push_back(call);
    }
    run_idempotent(calls, table_op("creation", config.name),
                   [](Stub& stub, const std::shared_ptr<CreateCall>& call) {
                     stub.async()->CreateTable(&call->context, &call->request, &call->response,
                                               [call](grpc::Status s) { call->complete(s); });
                   });
    const int64_t step = calls.front()->response.step();
    for (const auto& call : calls) {
      if (call->response.step() != step) {
        throw BackendError("gradwire: the servers disagree on the step of table '" + config.name +
                           "': " + std::to_string(step) + " on " + addresses_.front() + ", " +
                           std::to_string(call->response.step()) + " on " + call->address +
                           ". Were they restored from checkpoints of different steps? Restore "
                           "all servers from the same checkpoint.");
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    tables_[config.name] = TableState{config, step};
  }

  const TableConfig& table(const std::string& name) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return find_table(name).config;
  }

  at::Tensor lookup(const std::string& name, const at::Tensor& ids) override {
    const TableConfig config = table(name);
    check_ids(ids, config.num_rows, "lookup of", name);
    if (ids.dim() != 1) {
      throw InvalidArgument("gradwire: lookup of table '" + name + "': ids must be 1-D, got " +
                            std::to_string(ids.dim()) + " dimensions");
    }
    const UniqueIds unique = unique_ids(ids.contiguous());
    const std::vector<ServerShare> shares = route_ids(unique.ids, num_servers());
    std::vector<std::shared_ptr<LookupCall>> calls;
    for (const ServerShare& share : shares) {
      auto call = std::make_shared<LookupCall>();
      call->request.set_table(name);
      rpc::encode_tensor(share.ids, call->request.mutable_ids(), "lookup.ids");
      calls.push_back(call);
    }
    run_idempotent(calls, table_op("lookup", name), shares,
                   [](Stub& stub, const std::shared_ptr<LookupCall>& call) {
                     stub.async()->Lookup(&call->context, &call->request, &call->response,
                                          [call](grpc::Status s) { call->complete(s); });
                   });
    at::Tensor rows = at::empty({unique.ids.numel(), config.dim}, at::kFloat);
    for (size_t i = 0; i < shares.size(); ++i) {
      rpc::TensorExpectation expect;
      expect.dtype = at::kFloat;
      expect.rank = 2;
      const at::Tensor got = rpc::decode_tensor(calls[i]->response.rows(), "lookup.rows", expect);
      if (got.size(0) != shares[i].ids.numel() || got.size(1) != config.dim) {
        throw BackendError(
            "gradwire: lookup of table '" + name + "': server " + calls[i]->address + " answered " +
            std::to_string(got.size(0)) + " x " + std::to_string(got.size(1)) + " rows for " +
            std::to_string(shares[i].ids.numel()) + " ids of dim " + std::to_string(config.dim));
      }
      rows.index_copy_(0, shares[i].positions, got);
    }
    return rows.index_select(0, unique.inverse);
  }

  void push(const std::string& name, const at::Tensor& ids, const at::Tensor& grads) override {
    int64_t step = 0;
    TableConfig config;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const TableState& state = find_table(name);
      config = state.config;
      step = state.step;
    }
    check_ids(ids, config.num_rows, "push to", name);
    if (ids.dim() != 1 || grads.dim() != 2 || grads.size(0) != ids.size(0) ||
        grads.size(1) != config.dim || grads.scalar_type() != at::kFloat) {
      throw InvalidArgument("gradwire: push to table '" + name + "': expected ids [n] and float " +
                            "grads [n, " + std::to_string(config.dim) + "], got ids " +
                            c10::str(ids.sizes()) + " and " + c10::toString(grads.scalar_type()) +
                            " grads " + c10::str(grads.sizes()));
    }
    const SparseRows rows = coalesce(ids.contiguous(), grads.contiguous());
    for (const ServerShare& share : route_ids(rows.ids, num_servers())) {
      auto call = std::make_shared<PushCall>();
      call->address = addresses_[share.server];
      call->request.set_table(name);
      call->request.set_trainer(trainer_rank_);
      call->request.set_step(step);
      rpc::encode_tensor(share.ids, call->request.mutable_ids(), "push.ids");
      rpc::encode_tensor(rows.values.index_select(0, share.positions),
                         call->request.mutable_grads(), "push.grads");
      rpc::prepare_context(call->context, token_,
                           std::chrono::system_clock::now() + options_.call_deadline);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        pushes_.push_back(call);
      }
      stubs_[share.server]->async()->Push(&call->context, &call->request, &call->response,
                                          [call](grpc::Status s) { call->complete(s); });
    }
  }

  void flush() override {
    std::vector<std::shared_ptr<PushCall>> pushes = take_pushes();
    wait_all(pushes, "push", options_.call_deadline);
  }

  void step() override {
    flush();
    std::vector<std::pair<std::string, TableState>> tables;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tables.assign(tables_.begin(), tables_.end());
    }
    for (const auto& [name, state] : tables) {
      if (state.config.mode == UpdateMode::kSync) {
        std::vector<std::shared_ptr<StepCall>> calls;
        for (int server = 0; server < num_servers(); ++server) {
          auto call = std::make_shared<StepCall>();
          call->address = addresses_[server];
          call->request.set_table(name);
          call->request.set_trainer(trainer_rank_);
          call->request.set_step(state.step);
          rpc::prepare_context(call->context, token_,
                               std::chrono::system_clock::now() + step_timeout_);
          stubs_[server]->async()->Step(&call->context, &call->request, &call->response,
                                        [call](grpc::Status s) { call->complete(s); });
          calls.push_back(call);
        }
        wait_all(calls, "step " + std::to_string(state.step) + " of table '" + name + "'",
                 step_timeout_);
      }
      std::lock_guard<std::mutex> lock(mutex_);
      tables_[name].step = state.step + 1;
    }
  }

  int64_t step_count(const std::string& name) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return find_table(name).step;
  }

  void checkpoint() override {
    std::vector<std::shared_ptr<CheckpointCall>> calls;
    for (int server = 0; server < num_servers(); ++server) {
      calls.push_back(std::make_shared<CheckpointCall>());
    }
    run_idempotent(calls, "checkpoint", [](Stub& stub, const std::shared_ptr<CheckpointCall>& c) {
      stub.async()->Checkpoint(&c->context, &c->request, &c->response,
                               [c](grpc::Status s) { c->complete(s); });
    });
  }

 private:
  struct TableState {
    TableConfig config;
    int64_t step = 0;
  };

  const TableState& find_table(const std::string& name) const {
    auto found = tables_.find(name);
    if (found == tables_.end()) {
      throw InvalidArgument("gradwire: table '" + name +
                            "' is unknown to this client; call create_table (or construct the "
                            "RemoteEmbeddingBag) first");
    }
    return found->second;
  }

  std::vector<std::shared_ptr<PushCall>> take_pushes() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::shared_ptr<PushCall>> pushes;
    pushes.swap(pushes_);
    return pushes;
  }

  // Waits for every call and throws the first failure as a gradwire error naming its server.
  template <typename Call>
  void wait_all(const std::vector<std::shared_ptr<Call>>& calls, const std::string& operation,
                milliseconds deadline) {
    const Clock::time_point limit = Clock::now() + deadline + kCompletionMargin;
    for (const auto& call : calls) {
      if (!call->wait(limit)) call->context.TryCancel();
      call->wait(Clock::now() + kCompletionMargin);
    }
    for (const auto& call : calls) {
      if (!call->status.ok()) {
        rpc::throw_rpc_error(call->status, operation, call->address, call->waited());
      }
    }
  }

  // One call per server (calls[i] to server i), in parallel; those that fail with UNAVAILABLE
  // are retried with backoff on the calling thread until the deadline. Throws the first error.
  template <typename Call, typename Start>
  void run_idempotent(const std::vector<std::shared_ptr<Call>>& calls, const std::string& operation,
                      Start start) {
    std::vector<ServerShare> all;
    for (int server = 0; server < num_servers(); ++server) all.push_back({server, {}, {}});
    run_idempotent(calls, operation, all, start);
  }

  template <typename Call, typename Start>
  void run_idempotent(const std::vector<std::shared_ptr<Call>>& calls, const std::string& operation,
                      const std::vector<ServerShare>& shares, Start start) {
    const Clock::time_point started = Clock::now();
    const Clock::time_point deadline = started + options_.call_deadline;
    const auto system_deadline = std::chrono::system_clock::now() + options_.call_deadline;
    for (size_t i = 0; i < calls.size(); ++i) {
      calls[i]->address = addresses_[shares[i].server];
      rpc::prepare_context(calls[i]->context, token_, system_deadline);
      start(*stubs_[shares[i].server], calls[i]);
    }
    for (size_t i = 0; i < calls.size(); ++i) {
      Call& call = *calls[i];
      if (!call.wait(deadline + kCompletionMargin)) call.context.TryCancel();
      call.wait(Clock::now() + kCompletionMargin);
      int retries = 0;
      while (!call.status.ok()) {
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
        const std::optional<milliseconds> delay =
            rpc::next_retry_delay(call.status.error_code(), retries, retry_, left);
        if (!delay) {
          rpc::throw_rpc_error(call.status, operation, call.address,
                               std::chrono::duration_cast<milliseconds>(Clock::now() - started));
        }
        std::this_thread::sleep_for(*delay);
        ++retries;
        // A fresh call with the same request (a context serves one call only).
        auto again = std::make_shared<Call>();
        again->request = call.request;
        again->address = call.address;
        rpc::prepare_context(again->context, token_, system_deadline);
        start(*stubs_[shares[i].server], again);
        if (!again->wait(deadline + kCompletionMargin)) again->context.TryCancel();
        again->wait(Clock::now() + kCompletionMargin);
        call.status = again->status;
        call.response = again->response;
      }
    }
  }

  ClientOptions options_;
  std::vector<std::string> addresses_;
  std::string token_;
  int trainer_rank_ = 0;
  int num_trainers_ = 1;
  milliseconds step_timeout_{0};
  rpc::RetryPolicy retry_;
  std::vector<std::unique_ptr<Stub>> stubs_;

  mutable std::mutex mutex_;  // guards tables_ and pushes_
  std::map<std::string, TableState> tables_;
  std::vector<std::shared_ptr<PushCall>> pushes_;
};

}  // namespace

std::shared_ptr<Client> connect(const ClientOptions& options) {
  return std::make_shared<ClientImpl>(options);
}

}  // namespace gradwire::ps
