// The parameter-server client (include/gradwire/ps/client.h): connecting and the tables'
// lifecycle (create, resume, assign, checkpoint). The data calls are in client_data.cpp and
// client_batches.cpp, the routes to the servers in routes.cpp; the class in client_impl.h.
#include "client_impl.h"
#include "gradwire/common/env.h"
#include "rpc/auth.h"
#include "rpc/wire.h"

namespace gradwire::ps {

namespace {

// This process's incarnation: the time it first asked, in ns since the epoch (a restarted
// trainer's new process gets a later one).
uint64_t process_incarnation() {
  static const uint64_t incarnation =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  return incarnation;
}

}  // namespace

ClientImpl::ClientImpl(const ClientOptions& options) : options_(options) {
  token_ = options.token.value_or("");  // resolved: set
  trainer_rank_ = *options.rank;
  num_trainers_ = *options.world_size;
  step_timeout_ = *options.step_timeout;
  attempt_.restart = options.attempt.value_or(0);
  attempt_.incarnation = options.incarnation.value_or(process_incarnation());
  retry_.max_retries = options.max_retries;
  retry_.initial_backoff = options.retry_backoff;
  deferred_.resize(static_cast<size_t>(num_servers()));
}

ClientImpl::~ClientImpl() {
  // Deferred pushes are sent, and pushes in flight waited for, so none outlives the stubs; their
  // errors have no one to go to.
  try {
    flush();
  } catch (const std::exception&) {
  }
}

void ClientImpl::create_table(const TableConfig& config) {
  timeline::Span span("create table", "ps", {{"table", config.name}});
  validate(config);
  std::vector<std::unique_ptr<CreateCall>> requests;
  for (int server = 0; server < num_servers(); ++server) {
    auto call = std::make_unique<CreateCall>();
    *call->request.mutable_config() = to_message(config);
    call->request.set_server_index(server);
    call->request.set_num_servers(num_servers());
    call->request.set_any_num_trainers(options_.elastic.value_or(false));
    routes_.offer(server, call->request);  // Note [shared memory], Note [call channels]
    requests.push_back(std::move(call));
  }
  CallQueue<CreateCall> queue;
  const std::vector<CreateCall*> calls =
      run_idempotent(queue, std::move(requests), all_servers(), table_op("creation", config.name));
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
          "': " + std::to_string(step) + " on " + servers().front() + ", " +
          std::to_string(call->response.step()) + " on " + call->address +
          ". A restarted trainer calls Client::resume(step) with its own checkpoint's step "
          "(docs/ps.md \"Restarts\"); otherwise restore all servers from the same checkpoint.";
    }
  }
  for (size_t server = 0; server < calls.size(); ++server) {
    routes_.answered(static_cast<int>(server), calls[server]->response);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  tables_[config.name] = std::move(state);
}

void ClientImpl::resume(int64_t step) {
  if (step < 0) {
    throw InvalidArgument("gradwire: resume at step " + std::to_string(step) + "; need >= 0");
  }
  flush();
  resume_tables(step, 0);
}

void ClientImpl::regroup(int64_t step, int rank, int world_size, int64_t attempt) {
  if (step < 0 || world_size < 1 || rank < 0 || rank >= world_size || attempt < 0) {
    throw InvalidArgument("gradwire: regroup as trainer " + std::to_string(rank) + " of " +
                          std::to_string(world_size) + " at step " + std::to_string(step) +
                          ", attempt " + std::to_string(attempt) +
                          "; need 0 <= rank < world_size, step >= 0 and attempt >= 0");
  }
  {
    // Pushes of the rolled-back steps: the deferred ones go, those in flight are waited for and
    // their errors ignored (the servers discard what they took at the new attempt).
    std::lock_guard<std::mutex> lock(mutex_);
    for (Deferred& deferred : deferred_) deferred = Deferred{};
  }
  try {
    wait_for_pushes();
  } catch (const Error&) {
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    trainer_rank_ = rank;
    num_trainers_ = world_size;
    attempt_.restart = attempt;
  }
  resume_tables(step, world_size);
}

void ClientImpl::resume_tables(int64_t step, int num_trainers) {
  timeline::Span span("resume", "ps", {{"step", step}, {"trainers", num_trainers}});
  const std::vector<std::pair<std::string, TableState>> tables = tables_now();
  for (const auto& [name, state] : tables) {
    const bool sync = state.config.mode == UpdateMode::kSync;
    if (sync || num_trainers != 0) {
      std::vector<std::unique_ptr<ResumeCall>> requests;
      for (int server = 0; server < num_servers(); ++server) {
        auto call = std::make_unique<ResumeCall>();
        call->request.set_table(name);
        call->request.set_trainer(trainer_rank_);
        call->request.set_step(step);
        call->request.set_num_trainers(num_trainers);
        *call->request.mutable_attempt() = to_message(attempt_);
        requests.push_back(std::move(call));
      }
      CallQueue<ResumeCall> queue;
      run_idempotent(queue, std::move(requests), all_servers(), table_op("resume", name));
    }
    TableConfig config = state.config;
    if (num_trainers != 0) config.num_trainers = num_trainers;
    std::lock_guard<std::mutex> lock(mutex_);
    tables_[name] = TableState{config, step, "", state.awaiting_values, state.server_rows};
  }
}

std::vector<std::string> ClientImpl::table_names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> names;
  for (const auto& entry : tables_) names.push_back(entry.first);
  return names;
}

const TableConfig& ClientImpl::table(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return find_table(name).config;
}

void ClientImpl::assign(const std::string& name, const at::Tensor& ids, const at::Tensor& rows) {
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
  timeline::Span span("assign", "ps", {{"table", name}, {"ids", ids.numel()}});
  const at::Tensor dense_ids = ids.contiguous();
  const at::Tensor dense_rows = rows.contiguous();
  check_ids(dense_ids, config.num_rows, "assign to", name);
  const int64_t rows_per_call =
      std::max<int64_t>(1, (options_.max_request_bytes - kRequestOverhead) / (8 + config.dim * 4));
  std::vector<RoutedIds> shares = split_shares(route_ids(dense_ids, num_servers()), rows_per_call);
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
    rpc::encode_tensor(
        share ? gather_rows(dense_rows, share->positions) : at::empty({0, config.dim}, at::kFloat),
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
  run_idempotent(first, std::move(requests), servers, table_op("assignment", name));
  requests.clear();
  servers.clear();
  for (int server = 0; server < num_servers(); ++server) {
    const int share = last[static_cast<size_t>(server)];
    add(server, share < 0 ? nullptr : &shares[static_cast<size_t>(share)], true);
  }
  CallQueue<AssignCall> final_calls;
  run_idempotent(final_calls, std::move(requests), servers, table_op("assignment", name));
  std::lock_guard<std::mutex> lock(mutex_);
  tables_[name].awaiting_values = false;
}

bool ClientImpl::awaiting_values(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return find_table(name).awaiting_values;
}

int64_t ClientImpl::step_count(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return find_table(name).step;
}

void ClientImpl::checkpoint() {
  timeline::Span span("checkpoint", "ps");
  std::vector<std::unique_ptr<CheckpointCall>> requests;
  for (int server = 0; server < num_servers(); ++server) {
    requests.push_back(std::make_unique<CheckpointCall>());
  }
  CallQueue<CheckpointCall> queue;
  run_idempotent(queue, std::move(requests), all_servers(), "checkpoint");
}

at::Tensor ClientImpl::shared_tensor(at::IntArrayRef sizes, at::ScalarType dtype) {
  return regions_.allocate(sizes, dtype);
}

at::Tensor ClientImpl::server_rows(const std::string& name, int server) {
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

bool ClientImpl::shares_memory_with(int server) const { return routes_.shares_memory_with(server); }

std::string ClientImpl::transport(int server) const { return routes_.transport_name(server); }

// A copy of every table's state, taken under the lock.
std::vector<std::pair<std::string, ClientImpl::TableState>> ClientImpl::tables_now() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {tables_.begin(), tables_.end()};
}

// The table's state, BackendError while its servers disagree on the step.
ClientImpl::TableState ClientImpl::usable_table(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const TableState& state = find_table(name);
  if (!state.disagreement.empty()) throw BackendError(state.disagreement);
  return state;
}

const ClientImpl::TableState& ClientImpl::find_table(const std::string& name) const {
  auto found = tables_.find(name);
  if (found == tables_.end()) {
    throw InvalidArgument("gradwire: table '" + name +
                          "' is unknown to this client; call create_table (or construct the "
                          "RemoteEmbeddingBag) first");
  }
  return found->second;
}

std::vector<std::unique_ptr<CallQueue<BatchCall>>> ClientImpl::take_pushes() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::unique_ptr<CallQueue<BatchCall>>> pushes;
  pushes.swap(pushes_);
  return pushes;
}

std::vector<int> ClientImpl::all_servers() const {
  std::vector<int> servers;
  for (int server = 0; server < num_servers(); ++server) servers.push_back(server);
  return servers;
}

std::shared_ptr<Client> connect(const ClientOptions& options) {
  return connect(options, EnvMap::from_process());
}

std::shared_ptr<Client> connect(const ClientOptions& options, const EnvMap& env) {
  return std::make_shared<ClientImpl>(resolve(options, env));
}

}  // namespace gradwire::ps
