// The client's data calls (client_impl.h): lookups (planned in lookup_plan.cpp, started on every
// owning server at once and collected on the caller's thread), pushes kept in flight until flush()
// or step(), and the sync step on every server.
#include "client_impl.h"
#include "ps/core/coalesce.h"
#include "ps/core/id_routing.h"
#include "rpc/auth.h"
#include "rpc/wire.h"

namespace gradwire::ps {

at::Tensor ClientImpl::lookup(const std::string& name, const at::Tensor& ids) {
  LookupPlan plan = plan_lookup(name, ids);
  std::vector<std::unique_ptr<LookupCall>> requests = lookup_requests(name, plan);
  CallQueue<LookupCall> queue;
  const std::vector<LookupCall*> calls =
      run_idempotent(queue, std::move(requests), plan.servers(), table_op("lookup", name),
                     [](Stub& stub) { return prepare_lookup(stub); });
  return assemble_rows(name, plan, calls);
}

std::unique_ptr<PendingLookup> ClientImpl::start_lookup(const std::string& name,
                                                        const at::Tensor& ids, at::ScalarType wire,
                                                        const at::Tensor& out) {
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

void ClientImpl::push(const std::string& name, const at::Tensor& ids, const at::Tensor& grads) {
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
  const bool by_reference = regions_.find(rows.values).has_value() && shares_memory_with_all();
  const int64_t rows_per_call = std::max<int64_t>(
      1,
      (options_.max_request_bytes - kRequestOverhead) /
          (8 + (by_reference ? 0 : config.dim * static_cast<int64_t>(rows.values.element_size()))));
  for (RoutedIds& share : split_shares(route_ids(rows.ids, num_servers()), rows_per_call)) {
    auto call = std::make_unique<PushCall>();
    call->address = addresses_[share.server];
    call->request.set_table(name);
    call->request.set_trainer(trainer_rank_);
    call->request.set_step(step);
    *call->request.mutable_attempt() = to_message(attempt_);
    rpc::encode_tensor(view_of(share.ids), call->request.mutable_ids(), "push.ids");
    if (by_reference) {
      const at::Tensor values = gather_rows(rows.values, share.positions);
      const auto where = regions_.find(values);
      if (where) {
        rpc::encode_shared_tensor(values, *where, call->request.mutable_grads(), "push.grads");
      } else {
        rpc::encode_tensor(values, call->request.mutable_grads(), "push.grads");
      }
    } else {
      const int64_t count = static_cast<int64_t>(share.positions.size());
      gather_rows_into(rows.values, share.positions,
                       rpc::tensor_in_message(call->request.mutable_grads(), {count, config.dim},
                                              rows.values.scalar_type(), "push.grads"));
    }
    rpc::prepare_context(call->context, token_,
                         std::chrono::system_clock::now() + options_.call_deadline);
    start_call(*queue, std::move(call), share.server, prepare_push(*stubs_[share.server]));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  pushes_.push_back(std::move(queue));
}

void ClientImpl::flush() {
  std::vector<std::unique_ptr<CallQueue<PushCall>>> pushes = take_pushes();
  const Clock::time_point limit = Clock::now() + options_.call_deadline + kCompletionMargin;
  for (auto& queue : pushes) queue->wait_or_cancel(limit, kCompletionMargin);
  for (auto& queue : pushes) throw_first_failure(*queue, "push");
}

void ClientImpl::step() {
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
      throw_first_failure(queue, "step " + std::to_string(state.step) + " of table '" + name + "'");
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

at::Tensor ClientImpl::Pending::wait() {
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

LookupPlan ClientImpl::plan_lookup(const std::string& name, const at::Tensor& ids) const {
  return ps::plan_lookup(usable_table(name).config, name, ids, num_servers(),
                         options_.max_request_bytes, options_.max_message_bytes);
}

}  // namespace gradwire::ps
