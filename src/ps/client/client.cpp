// The parameter-server client (include/gradwire/ps/client.h): one channel and stub per server,
// calls to several servers in parallel on a completion queue the waiting thread polls
// (client_queue.h), pushes kept in flight until flush() or step().
#include "gradwire/ps/client.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>

#include "client_calls.h"
#include "gradwire/common/env.h"
#include "gradwire/common/error.h"
#include "lookup_plan.h"
#include "ps/core/coalesce.h"
#include "ps/core/id_routing.h"
#include "ps/messages/service_messages.h"
#include "rpc/auth.h"
#include "rpc/call_channel.h"
#include "rpc/channel.h"
#include "rpc/proto/ps.grpc.pb.h"
#include "rpc/retry.h"
#include "rpc/shared_memory.h"
#include "rpc/status.h"
#include "rpc/wire.h"

namespace gradwire::ps {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// This process's incarnation: the time it first asked, in ns since the epoch (a restarted
// trainer's new process gets a later one).
uint64_t process_incarnation() {
  static const uint64_t incarnation =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  return incarnation;
}

// gRPC completes a call by its deadline; waiting this much longer only guards against a bug.
constexpr milliseconds kCompletionMargin{5000};

// Where a CreateTable or Step answer says the server keeps the table's rows (Note [shared rows]).
template <typename Response>
std::optional<v1::SharedBytes> rows_of(const Response& response) {
  if (!response.has_rows()) return std::nullopt;
  return response.rows();
}

std::string table_op(const char* verb, const std::string& table) {
  return std::string(verb) + " of table '" + table + "'";
}

class ClientImpl final : public Client {
 public:
  explicit ClientImpl(const ClientOptions& options) : options_(options) {
    addresses_ = options.servers;
    token_ = options.token;
    trainer_rank_ = *options.rank;
    num_trainers_ = *options.world_size;
    step_timeout_ = *options.step_timeout;
    attempt_.restart = options.attempt.value_or(0);
    attempt_.incarnation = options.incarnation.value_or(process_incarnation());
    retry_.max_retries = options.max_retries;
    retry_.initial_backoff = options.retry_backoff;
    rpc::ChannelOptions channel;
    channel.tls_root_cert_file = options.tls_root_cert_file;
    channel.max_message_bytes = options.max_message_bytes;
    channel.max_send_bytes = options.max_request_bytes;
    for (const std::string& address : addresses_) {
      stubs_.push_back(v1::ParameterServer::NewStub(rpc::make_channel(address, channel)));
    }
    shared_with_.assign(addresses_.size(), 0);
    channels_.resize(addresses_.size());
  }

  ~ClientImpl() override {
    // Pushes still in flight: their queues wait for them, so none outlives the stubs.
    std::vector<std::unique_ptr<CallQueue<PushCall>>> pushes = take_pushes();
    for (auto& queue : pushes) {
      queue->wait_or_cancel(Clock::now() + options_.call_deadline + kCompletionMargin,
                            kCompletionMargin);
    }
  }

  int num_servers() const override { return static_cast<int>(addresses_.size()); }
  const std::vector<std::string>& servers() const override { return addresses_; }
  int rank() const override { return trainer_rank_; }
  int world_size() const override { return num_trainers_; }

  void create_table(const TableConfig& config) override {
    validate(config);
    std::vector<std::unique_ptr<CreateCall>> requests;
    for (int server = 0; server < num_servers(); ++server) {
      auto call = std::make_unique<CreateCall>();
      *call->request.mutable_config() = to_message(config);
      call->request.set_server_index(server);
      call->request.set_num_servers(num_servers());
      if (*options_.shared_memory) {
        // Note [shared memory] (service.cpp): may this server read our regions?
        call->request.set_host(options_.host_identity);
        *call->request.mutable_probe() = regions_.probe();
        // Note [call channels] (service.cpp): and serve our calls from memory?
        if (const auto channel = channel_to(server, false)) {
          *call->request.mutable_channel() = channel->reference();
        }
      }
      requests.push_back(std::move(call));
    }
    CallQueue<CreateCall> queue;
    const std::vector<CreateCall*> calls =
        run_idempotent(queue, std::move(requests), all_servers(), table_op("creation", config.name),
                       [](Stub& stub) { return prepare_create(stub); });
    // A sync table's servers step together, so they must agree. An async table's servers each
    // count the pushes they applied, which differ by owner and by who pushed first: the client
    // counts its own steps from 0.
    const bool sync = config.mode == UpdateMode::kSync;
    const int64_t step = sync ? calls.front()->response.step() : 0;
    TableState state{config, step, ""};
    for (const auto& call : calls) {
      state.server_rows.push_back(rows_of(call->response));
      state.awaiting_values = state.awaiting_values || call->response.awaiting_values();
      if (sync && call->response.step() != step && state.disagreement.empty()) {
        state.disagreement =
            "gradwire: the servers disagree on the step of table '" + config.name +
            "': " + std::to_string(step) + " on " + addresses_.front() + ", " +
            std::to_string(call->response.step()) + " on " + call->address +
            ". A restarted trainer calls Client::resume(step) with its own checkpoint's step "
            "(docs/ps.md \"Restarts\"); otherwise restore all servers from the same checkpoint.";
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t server = 0; server < calls.size(); ++server) {
      shared_with_[server] = calls[server]->response.shared_memory() ? 1 : 0;
      if (calls[server]->response.channel() && channels_[server]) channels_[server]->attached();
    }
    tables_[config.name] = std::move(state);
  }

  void resume(int64_t step) override {
    if (step < 0) {
      throw InvalidArgument("gradwire: resume at step " + std::to_string(step) + "; need >= 0");
    }
    flush();
    const std::vector<std::pair<std::string, TableState>> tables = tables_now();
    for (const auto& [name, state] : tables) {
      if (state.config.mode == UpdateMode::kSync) {
        std::vector<std::unique_ptr<ResumeCall>> requests;
        for (int server = 0; server < num_servers(); ++server) {
          auto call = std::make_unique<ResumeCall>();
          call->request.set_table(name);
          call->request.set_trainer(trainer_rank_);
          call->request.set_step(step);
          *call->request.mutable_attempt() = to_message(attempt_);
          requests.push_back(std::move(call));
        }
        CallQueue<ResumeCall> queue;
        run_idempotent(queue, std::move(requests), all_servers(), table_op("resume", name),
                       [](Stub& stub) { return prepare_resume(stub); });
      }
      std::lock_guard<std::mutex> lock(mutex_);
      tables_[name] = TableState{state.config, step, "", state.awaiting_values, state.server_rows};
    }
  }

  const TableConfig& table(const std::string& name) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return find_table(name).config;
  }

  at::Tensor lookup(const std::string& name, const at::Tensor& ids) override {
    LookupPlan plan = plan_lookup(name, ids);
    std::vector<std::unique_ptr<LookupCall>> requests = lookup_requests(name, plan);
    CallQueue<LookupCall> queue;
    const std::vector<LookupCall*> calls =
        run_idempotent(queue, std::move(requests), plan.servers(), table_op("lookup", name),
                       [](Stub& stub) { return prepare_lookup(stub); });
    return assemble_rows(name, plan, calls);
  }

  std::unique_ptr<PendingLookup> start_lookup(const std::string& name, const at::Tensor& ids,
                                              at::ScalarType wire, const at::Tensor& out) override {
    auto pending = std::make_unique<Pending>();
    pending->name = name;
    pending->plan = plan_lookup(name, ids);
    std::vector<std::unique_ptr<LookupCall>> requests = lookup_requests(name, pending->plan, wire);
    const std::vector<int> servers = pending->plan.servers();
    if (out.defined()) {
      const int64_t dim = pending->plan.config.dim;
      if (out.scalar_type() != at::kFloat || out.dim() != 2 || out.size(0) != ids.numel() ||
          out.size(1) != dim || !out.is_contiguous()) {
        throw InvalidArgument("gradwire: lookup of table '" + name + "': out must be a " +
                              "contiguous float tensor [" + std::to_string(ids.numel()) + ", " +
                              std::to_string(dim) + "], got " + out.toString() + " " +
                              c10::str(out.sizes()));
      }
      pending->out = out;
      // One server's answer for unique sorted ids, in the caller's order: written in place.
      const bool in_place = requests.size() == 1 && pending->plan.unique_already &&
                            wire == at::kFloat && shares_memory_with(servers.front());
      if (const auto where = in_place ? regions_.find(out) : std::nullopt) {
        *requests.front()->request.mutable_rows_into() = *where;
        pending->into = *where;
      }
    }
    const auto system_deadline = std::chrono::system_clock::now() + options_.call_deadline;
    pending->limit = Clock::now() + options_.call_deadline + kCompletionMargin;
    for (size_t i = 0; i < requests.size(); ++i) {
      requests[i]->address = addresses_[servers[i]];
      rpc::prepare_context(requests[i]->context, token_, system_deadline);
      pending->calls.push_back(&start_call(pending->queue, std::move(requests[i]), servers[i],
                                           prepare_lookup(*stubs_[servers[i]])));
    }
    return pending;
  }

  void assign(const std::string& name, const at::Tensor& ids, const at::Tensor& rows) override {
    const TableConfig config = usable_table(name).config;
    if (trainer_rank_ != 0) {
      throw InvalidArgument("gradwire: assign to table '" + name + "' from trainer " +
                            std::to_string(trainer_rank_) + "; only trainer 0 assigns values");
    }
    if (ids.dim() != 1 || rows.dim() != 2 || rows.size(0) != ids.size(0) ||
        rows.size(1) != config.dim || rows.scalar_type() != at::kFloat) {
      throw InvalidArgument("gradwire: assign to table '" + name + "': expected ids [n] and " +
                            "float rows [n, " + std::to_string(config.dim) + "], got ids " +
                            c10::str(ids.sizes()) + " and " + c10::toString(rows.scalar_type()) +
                            " rows " + c10::str(rows.sizes()));
    }
    const at::Tensor dense_ids = ids.contiguous();
    const at::Tensor dense_rows = rows.contiguous();
    check_ids(dense_ids, config.num_rows, "assign to", name);
    const int64_t rows_per_call = std::max<int64_t>(
        1, (options_.max_request_bytes - kRequestOverhead) / (8 + config.dim * 4));
    std::vector<RoutedIds> shares =
        split_shares(route_ids(dense_ids, num_servers()), rows_per_call);
    // Every server ends its waiting with one complete call: the last share of each, or an empty
    // call to a server that owns none of the ids.
    std::vector<int> last(static_cast<size_t>(num_servers()), -1);
    for (size_t i = 0; i < shares.size(); ++i)
      last[static_cast<size_t>(shares[i].server)] = static_cast<int>(i);
    std::vector<std::unique_ptr<AssignCall>> requests;
    std::vector<int> servers;
    auto add = [&](int server, RoutedIds* share, bool complete) {
      auto call = std::make_unique<AssignCall>();
      call->request.set_table(name);
      call->request.set_trainer(trainer_rank_);
      call->request.set_complete(complete);
      std::vector<int64_t> none;
      rpc::encode_tensor(view_of(share ? share->ids : none), call->request.mutable_ids(),
                         "assign.ids");
      rpc::encode_tensor(share ? gather_rows(dense_rows, share->positions)
                               : at::empty({0, config.dim}, at::kFloat),
                         call->request.mutable_rows(), "assign.rows");
      requests.push_back(std::move(call));
      servers.push_back(server);
    };
    // Non-final shares first, then the final ones: a server's values are complete only after
    // all its rows arrived (calls to one server may run in any order).
    for (size_t i = 0; i < shares.size(); ++i) {
      if (last[static_cast<size_t>(shares[i].server)] != static_cast<int>(i)) {
        add(shares[i].server, &shares[i], false);
      }
    }
    CallQueue<AssignCall> first;
    run_idempotent(first, std::move(requests), servers, table_op("assignment", name),
                   [](Stub& stub) { return prepare_assign(stub); });
    requests.clear();
    servers.clear();
    for (int server = 0; server < num_servers(); ++server) {
      const int share = last[static_cast<size_t>(server)];
      add(server, share < 0 ? nullptr : &shares[static_cast<size_t>(share)], true);
    }
    CallQueue<AssignCall> final_calls;
    run_idempotent(final_calls, std::move(requests), servers, table_op("assignment", name),
                   [](Stub& stub) { return prepare_assign(stub); });
    std::lock_guard<std::mutex> lock(mutex_);
    tables_[name].awaiting_values = false;
  }

  bool awaiting_values(const std::string& name) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return find_table(name).awaiting_values;
  }

  void push(const std::string& name, const at::Tensor& ids, const at::Tensor& grads) override {
    const TableState state = usable_table(name);
    const TableConfig& config = state.config;
    const int64_t step = state.step;
    const at::ScalarType type = grads.scalar_type();
    if (ids.dim() != 1 || grads.dim() != 2 || grads.size(0) != ids.size(0) ||
        grads.size(1) != config.dim ||
        (type != at::kFloat && type != at::kHalf && type != at::kBFloat16)) {
      check_ids(ids, config.num_rows, "push to", name);
      throw InvalidArgument("gradwire: push to table '" + name + "': expected ids [n] and float " +
                            "grads [n, " + std::to_string(config.dim) + "], got ids " +
                            c10::str(ids.sizes()) + " and " + c10::toString(grads.scalar_type()) +
                            " grads " + c10::str(grads.sizes()));
    }
    const at::Tensor dense_ids = ids.contiguous();
    check_ids(dense_ids, config.num_rows, "push to", name);
    // RemoteEmbeddingBag's hook pushes unique sorted ids: nothing to sum then.
    const SparseRows rows = strictly_increasing(dense_ids)
                                ? SparseRows{dense_ids, grads.contiguous()}
                                : coalesce(dense_ids, grads.to(at::kFloat).contiguous());
    auto queue = std::make_unique<CallQueue<PushCall>>();
    // Gradients in shared memory go by reference to servers that share it: only ids travel.
    const bool by_reference = regions_.find(rows.values).has_value() &&
                              shares_memory_with_all();
    const int64_t rows_per_call = std::max<int64_t>(
        1, (options_.max_request_bytes - kRequestOverhead) /
               (8 + (by_reference ? 0
                                  : config.dim * static_cast<int64_t>(rows.values.element_size()))));
    for (RoutedIds& share : split_shares(route_ids(rows.ids, num_servers()), rows_per_call)) {
      auto call = std::make_unique<PushCall>();
      call->address = addresses_[share.server];
      call->request.set_table(name);
      call->request.set_trainer(trainer_rank_);
      call->request.set_step(step);
      *call->request.mutable_attempt() = to_message(attempt_);
      rpc::encode_tensor(view_of(share.ids), call->request.mutable_ids(), "push.ids");
      const at::Tensor values = gather_rows(rows.values, share.positions);
      const auto where = by_reference ? regions_.find(values) : std::nullopt;
      if (where) {
        rpc::encode_shared_tensor(values, *where, call->request.mutable_grads(), "push.grads");
      } else {
        rpc::encode_tensor(values, call->request.mutable_grads(), "push.grads");
      }
      rpc::prepare_context(call->context, token_,
                           std::chrono::system_clock::now() + options_.call_deadline);
      start_call(*queue, std::move(call), share.server, prepare_push(*stubs_[share.server]));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    pushes_.push_back(std::move(queue));
  }

  void flush() override {
    std::vector<std::unique_ptr<CallQueue<PushCall>>> pushes = take_pushes();
    const Clock::time_point limit = Clock::now() + options_.call_deadline + kCompletionMargin;
    for (auto& queue : pushes) queue->wait_or_cancel(limit, kCompletionMargin);
    for (auto& queue : pushes) throw_first_failure(*queue, "push");
  }

  void step() override {
    flush();
    const std::vector<std::pair<std::string, TableState>> tables = tables_now();
    for (const auto& [name, state] : tables) {
      if (!state.disagreement.empty()) throw BackendError(state.disagreement);
      // Async tables with bounded staleness wait in Step too (until the slowest is near).
      if (state.config.mode == UpdateMode::kSync || state.config.staleness > 0) {
        CallQueue<StepCall> queue;
        for (int server = 0; server < num_servers(); ++server) {
          auto call = std::make_unique<StepCall>();
          call->address = addresses_[server];
          call->request.set_table(name);
          call->request.set_trainer(trainer_rank_);
          call->request.set_step(state.step);
          *call->request.mutable_attempt() = to_message(attempt_);
          rpc::prepare_context(call->context, token_,
                               std::chrono::system_clock::now() + step_timeout_);
          start_call(queue, std::move(call), server, prepare_step(*stubs_[server]));
        }
        queue.wait_or_cancel(Clock::now() + step_timeout_ + kCompletionMargin, kCompletionMargin);
        throw_first_failure(queue,
                            "step " + std::to_string(state.step) + " of table '" + name + "'");
        // Where each server keeps the rows now (a restarted server's are elsewhere).
        std::vector<std::optional<v1::SharedBytes>> rows;
        for (const auto& call : queue.calls()) rows.push_back(rows_of(call->response));
        std::lock_guard<std::mutex> lock(mutex_);
        tables_[name].server_rows = std::move(rows);
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
    std::vector<std::unique_ptr<CheckpointCall>> requests;
    for (int server = 0; server < num_servers(); ++server) {
      requests.push_back(std::make_unique<CheckpointCall>());
    }
    CallQueue<CheckpointCall> queue;
    run_idempotent(queue, std::move(requests), all_servers(), "checkpoint",
                   [](Stub& stub) { return prepare_checkpoint(stub); });
  }

  at::Tensor shared_tensor(at::IntArrayRef sizes, at::ScalarType dtype) override {
    return regions_.allocate(sizes, dtype);
  }

  at::Tensor server_rows(const std::string& name, int server) override {
    std::optional<v1::SharedBytes> where;
    TableConfig config;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const TableState& state = find_table(name);
      if (server < 0 || server >= static_cast<int>(state.server_rows.size())) return {};
      where = state.server_rows[static_cast<size_t>(server)];
      config = state.config;
    }
    if (!where) return {};
    try {
      return server_regions_.view(
          *where, {rows_on_server(config.num_rows, server, num_servers()), config.dim}, at::kFloat,
          "server_rows");
    } catch (const InvalidArgument&) {
      return {};  // not mappable from here: the caller looks the rows up instead
    }
  }

  bool shares_memory_with(int server) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return server >= 0 && server < num_servers() && shared_with_[static_cast<size_t>(server)];
  }

  std::string transport(int server) const override {
    return channel_to(server, true) ? "shared memory" : "grpc";
  }

 private:
  struct TableState {
    TableConfig config;
    int64_t step = 0;
    std::string disagreement;      // non-empty: the servers' steps differ (see create_table)
    bool awaiting_values = false;  // a dense table some server waits to be assigned
    // Per server, where it keeps the rows in shared memory (Note [shared rows] in service.cpp).
    std::vector<std::optional<v1::SharedBytes>> server_rows;
  };

  // start_lookup's calls in flight; wait() polls them on the caller's thread.
  struct Pending final : PendingLookup {
    std::string name;
    LookupPlan plan;
    CallQueue<LookupCall> queue;
    std::vector<LookupCall*> calls;
    Clock::time_point limit;

    at::Tensor out;                          // the caller's, if given
    std::optional<v1::SharedBytes> into;     // where the server writes the rows itself

    at::Tensor wait() override {
      queue.wait_or_cancel(limit, kCompletionMargin);
      throw_first_failure(queue, table_op("lookup", name));
      if (into) {
        const v1::Tensor& rows = calls.front()->response.rows();
        if (!rows.has_shared() || rows.shared().key() != into->key() ||
            rows.shared().offset() != into->offset() || rows.shape_size() != 2 ||
            rows.shape(0) != out.size(0) || rows.shape(1) != out.size(1)) {
          throw BackendError("gradwire: lookup of table '" + name + "': server " +
                             calls.front()->address +
                             " did not answer in the shared memory it was given");
        }
        return out;
      }
      const at::Tensor rows = assemble_rows(name, plan, calls);
      if (!out.defined()) return rows;
      out.copy_(rows);
      return out;
    }
  };

  LookupPlan plan_lookup(const std::string& name, const at::Tensor& ids) const {
    return ps::plan_lookup(usable_table(name).config, name, ids, num_servers(),
                           options_.max_request_bytes, options_.max_message_bytes);
  }

  // A copy of every table's state, taken under the lock.
  std::vector<std::pair<std::string, TableState>> tables_now() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return {tables_.begin(), tables_.end()};
  }

  // The table's state, BackendError while its servers disagree on the step.
  TableState usable_table(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const TableState& state = find_table(name);
    if (!state.disagreement.empty()) throw BackendError(state.disagreement);
    return state;
  }

  // This trainer's call channel to `server` (Note [call channels] in service.cpp), created on
  // first use when shared memory is on; nullptr without one or, with `usable`, when the server
  // does not serve it (not attached, or broken by a timeout or the server's exit).
  std::shared_ptr<rpc::ChannelClient> channel_to(int server, bool usable) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (server < 0 || server >= num_servers() || !*options_.shared_memory) return nullptr;
    auto& channel = channels_[static_cast<size_t>(server)];
    if (!channel && !usable) {
      try {
        channel = std::make_shared<rpc::ChannelClient>(regions_, addresses_[server]);
      } catch (const BackendError&) {
        return nullptr;  // no memory for it: calls go over gRPC
      }
    }
    return channel && (!usable || channel->usable()) ? channel : nullptr;
  }

  // Starts `call` to `server` on `queue`: Lookup, Push and Step over the server's call channel
  // when it serves one and the call fits a slot, everything else over gRPC.
  template <typename Call, typename Prepare>
  Call& start_call(CallQueue<Call>& queue, std::unique_ptr<Call> call, int server,
                   Prepare prepare) {
    if constexpr (std::is_same_v<Call, LookupCall>) {
      if (auto channel = channel_to(server, true)) {
        // The answer's rows in float32 (16-bit ones are smaller), unless they go into memory.
        const v1::Tensor& ids = call->request.ids();
        const int64_t rows = ids.shape_size() == 1 ? ids.shape(0) : 0;
        const int64_t answer = call->request.has_rows_into()
                                   ? kRequestOverhead
                                   : kRequestOverhead + rows * table_dim(call->request.table()) * 4;
        return queue.start(std::move(call), prepare, channel, rpc::ChannelMethod::kLookup,
                           answer);
      }
    } else if constexpr (std::is_same_v<Call, PushCall> || std::is_same_v<Call, StepCall>) {
      if (auto channel = channel_to(server, true)) {
        return queue.start(std::move(call), prepare, channel,
                           std::is_same_v<Call, PushCall> ? rpc::ChannelMethod::kPush
                                                          : rpc::ChannelMethod::kStep,
                           kRequestOverhead);
      }
    }
    return queue.start(std::move(call), prepare);
  }

  int64_t table_dim(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = tables_.find(name);
    return found == tables_.end() ? 0 : found->second.config.dim;
  }

  bool shares_memory_with_all() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::all_of(shared_with_.begin(), shared_with_.end(), [](char on) { return on != 0; });
  }

  const TableState& find_table(const std::string& name) const {
    auto found = tables_.find(name);
    if (found == tables_.end()) {
      throw InvalidArgument("gradwire: table '" + name +
                            "' is unknown to this client; call create_table (or construct the "
                            "RemoteEmbeddingBag) first");
    }
    return found->second;
  }

  std::vector<std::unique_ptr<CallQueue<PushCall>>> take_pushes() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::unique_ptr<CallQueue<PushCall>>> pushes;
    pushes.swap(pushes_);
    return pushes;
  }

  std::vector<int> all_servers() const {
    std::vector<int> servers;
    for (int server = 0; server < num_servers(); ++server) servers.push_back(server);
    return servers;
  }

  // Throws the first failed call of a finished queue as a gradwire error naming its server.
  template <typename Call>
  static void throw_first_failure(const CallQueue<Call>& queue, const std::string& operation) {
    for (const auto& call : queue.calls()) {
      if (!call->status.ok()) {
        rpc::throw_rpc_error(call->status, operation, call->address, call->waited());
      }
    }
  }

  // One call per entry of `servers` (requests[i] to servers[i]) on `queue`, in parallel; those
  // that fail with UNAVAILABLE are retried with backoff on the calling thread until the deadline.
  // Returns the calls that succeeded, in request order (a retry replaces its first try). Throws
  // the first error. `prepare(stub)` gives the method's PrepareAsync function.
  template <typename Call, typename Prepare>
  std::vector<Call*> run_idempotent(CallQueue<Call>& queue,
                                    std::vector<std::unique_ptr<Call>> requests,
                                    const std::vector<int>& servers, const std::string& operation,
                                    Prepare prepare) {
    const Clock::time_point started = Clock::now();
    const Clock::time_point deadline = started + options_.call_deadline;
    const auto system_deadline = std::chrono::system_clock::now() + options_.call_deadline;
    std::vector<Call*> calls;
    for (size_t i = 0; i < requests.size(); ++i) {
      requests[i]->address = addresses_[servers[i]];
      rpc::prepare_context(requests[i]->context, token_, system_deadline);
      calls.push_back(
          &start_call(queue, std::move(requests[i]), servers[i], prepare(*stubs_[servers[i]])));
    }
    queue.wait_or_cancel(deadline + kCompletionMargin, kCompletionMargin);
    for (size_t i = 0; i < calls.size(); ++i) {
      int retries = 0;
      while (!calls[i]->status.ok()) {
        const Call& failed = *calls[i];
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
        const std::optional<milliseconds> delay =
            rpc::next_retry_delay(failed.status.error_code(), retries, retry_, left);
        if (!delay) {
          rpc::throw_rpc_error(failed.status, operation, failed.address,
                               std::chrono::duration_cast<milliseconds>(Clock::now() - started));
        }
        std::this_thread::sleep_for(*delay);
        ++retries;
        // A fresh call with the same request (a context serves one call only).
        auto again = std::make_unique<Call>();
        again->request = failed.request;
        again->address = failed.address;
        rpc::prepare_context(again->context, token_, system_deadline);
        calls[i] = &start_call(queue, std::move(again), servers[i], prepare(*stubs_[servers[i]]));
        queue.wait_or_cancel(deadline + kCompletionMargin, kCompletionMargin);
      }
    }
    return calls;
  }

  ClientOptions options_;
  std::vector<std::string> addresses_;
  std::string token_;
  int trainer_rank_ = 0;
  int num_trainers_ = 1;
  milliseconds step_timeout_{0};
  Attempt attempt_;
  rpc::RetryPolicy retry_;
  std::vector<std::unique_ptr<Stub>> stubs_;

  mutable rpc::SharedRegions regions_;     // shared_tensor()'s memory (thread-safe)
  rpc::SharedRegionCache server_regions_;  // the servers' rows we read (thread-safe)

  mutable std::mutex mutex_;  // guards tables_, pushes_ and shared_with_
  std::map<std::string, TableState> tables_;
  std::vector<char> shared_with_;  // per server: it shares memory (create_table's answer)
  // Per server, this trainer's call channel (created at the first create_table with shared memory
  // on); calls hold them too, so a channel outlives the client while a call of it is in flight.
  mutable std::vector<std::shared_ptr<rpc::ChannelClient>> channels_;
  std::vector<std::unique_ptr<CallQueue<PushCall>>> pushes_;  // one queue per push()
};

}  // namespace

std::shared_ptr<Client> connect(const ClientOptions& options) {
  return connect(options, EnvMap::from_process());
}

std::shared_ptr<Client> connect(const ClientOptions& options, const EnvMap& env) {
  return std::make_shared<ClientImpl>(resolve(options, env));
}

}  // namespace gradwire::ps
