// The client's data calls (client_impl.h): lookups of one or several tables (planned in
// lookup_plan.cpp, packed per server with the pushes deferred to it, started on every owning
// server at once and collected on the caller's thread) and pushes (sent at once, or deferred).
// flush() and step() are in client_batches.cpp.
#include "client_impl.h"
#include "ps/core/coalesce.h"
#include "ps/core/id_routing.h"
#include "rpc/auth.h"
#include "rpc/wire.h"

namespace gradwire::ps {

at::Tensor ClientImpl::lookup(const std::string& name, const at::Tensor& ids) {
  return lookup_many({TableIds{name, ids}}).front();
}

std::vector<at::Tensor> ClientImpl::lookup_many(const std::vector<TableIds>& lookups) {
  // The calls to each server are async spans of their own (client_timeline.h).
  timeline::Span span("lookup", "ps");
  if (span.active() && !lookups.empty()) {
    int64_t ids = 0;
    for (const TableIds& lookup : lookups) ids += lookup.ids.defined() ? lookup.ids.numel() : 0;
    span.arg({"table", lookups.front().table});
    span.arg({"tables", static_cast<int64_t>(lookups.size())});
    span.arg({"ids", ids});
  }
  bool carried = false;
  std::unique_ptr<Pending> pending =
      plan_lookups(lookups, at::kFloat, at::Tensor(), true, &carried);
  // Once the calls ended (run_idempotent returns, or throws after they did), the pushes they
  // carried were applied or failed: flush() on another thread need not wait for them any more.
  struct CarriedDone {
    ClientImpl* client;
    bool carried;
    ~CarriedDone() {
      if (carried) client->carried_done();
    }
  } done{this, carried};
  // Retried on UNAVAILABLE unless a batch carries pushes (retryable()).
  pending->calls = run_idempotent(pending->queue, std::move(pending->requests), pending->servers,
                                  pending->operation());
  return pending->rows();
}

std::unique_ptr<PendingLookup> ClientImpl::start_lookup(const std::string& name,
                                                        const at::Tensor& ids, at::ScalarType wire,
                                                        const at::Tensor& out) {
  timeline::Span span("start lookup", "ps");
  if (span.active()) {
    span.arg({"table", name});
    span.arg({"ids", ids.defined() ? ids.numel() : int64_t{0}});
  }
  // Its calls are collected whenever the caller waits: they carry no deferred pushes, which
  // flush() would then wait for.
  std::unique_ptr<Pending> pending = plan_lookups({TableIds{name, ids}}, wire, out, false, nullptr);
  const auto system_deadline = std::chrono::system_clock::now() + options_.call_deadline;
  pending->limit = Clock::now() + options_.call_deadline + kCompletionMargin;
  for (size_t i = 0; i < pending->requests.size(); ++i) {
    const int server = pending->servers[i];
    rpc::prepare_context(pending->requests[i]->context, token_, system_deadline);
    pending->calls.push_back(&start_call(pending->queue, std::move(pending->requests[i]), server));
  }
  return pending;
}

std::unique_ptr<ClientImpl::Pending> ClientImpl::plan_lookups(const std::vector<TableIds>& lookups,
                                                              at::ScalarType wire,
                                                              const at::Tensor& out,
                                                              bool carry_pushes, bool* carried) {
  auto pending = std::make_unique<Pending>();
  std::vector<std::vector<v1::LookupRequest>> requests;
  std::vector<int> servers;  // the servers asked, each once
  for (const TableIds& lookup : lookups) {
    pending->names.push_back(lookup.table);
    pending->plans.push_back(plan_lookup(lookup.table, lookup.ids));
    requests.push_back(lookup_requests(lookup.table, pending->plans.back(), wire));
    for (const int server : pending->plans.back().servers()) {
      if (std::find(servers.begin(), servers.end(), server) == servers.end()) {
        servers.push_back(server);
      }
    }
  }
  if (out.defined()) {
    const std::string& name = lookups.front().table;
    const LookupPlan& plan = pending->plans.front();
    const int64_t count = lookups.front().ids.numel();
    if (out.scalar_type() != at::kFloat || out.dim() != 2 || out.size(0) != count ||
        out.size(1) != plan.config.dim || !out.is_contiguous()) {
      throw InvalidArgument("gradwire: lookup of table '" + name + "': out must be a " +
                            "contiguous float tensor [" + std::to_string(count) + ", " +
                            std::to_string(plan.config.dim) + "], got " + out.toString() + " " +
                            c10::str(out.sizes()));
    }
    pending->out = out;
    // One server's answer for unique sorted ids, in the caller's order: written in place
    // (Note [shared memory]).
    const bool in_place = requests.front().size() == 1 && plan.unique_already && wire == at::kFloat;
    if (const auto where =
            in_place ? routes_.lookup_into(plan.shares.front().server, out) : std::nullopt) {
      *requests.front().front().mutable_rows_into() = *where;
      pending->into = *where;
    }
  }
  // Per server: the pushes deferred to it, then its share of every table (Note [batched calls]).
  BatchPlan plan([this](int server) { return routes_.batch_limits(server); });
  if (carry_pushes) *carried = add_deferred(plan, servers, /*by_lookup=*/true);
  const int64_t wire_bytes = static_cast<int64_t>(c10::elementSize(wire));
  for (size_t t = 0; t < requests.size(); ++t) {
    const LookupPlan& table = pending->plans[t];
    pending->places.emplace_back();
    for (size_t i = 0; i < requests[t].size(); ++i) {
      const RoutedIds& share = table.shares[i];
      const int64_t answer =
          requests[t][i].has_rows_into()
              ? 0
              : static_cast<int64_t>(share.ids.size()) * table.config.dim * wire_bytes;
      pending->places.back().push_back(plan.add(share.server, std::move(requests[t][i]), answer));
    }
  }
  BatchCalls batches = batch_calls(plan, std::nullopt);
  pending->requests = std::move(batches.calls);
  pending->servers = std::move(batches.servers);
  return pending;
}

void ClientImpl::push(const std::string& name, const at::Tensor& ids, const at::Tensor& grads) {
  // Sent without waiting: the calls' spans end when flush() or step() collects them.
  timeline::Span span("push", "ps");
  if (span.active()) {
    span.arg({"table", name});
    span.arg({"ids", ids.defined() ? ids.numel() : int64_t{0}});
    span.arg({"bytes", grads.defined() ? static_cast<int64_t>(grads.nbytes()) : int64_t{0}});
    span.arg({"deferred", options_.defer_pushes});
  }
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
  // Gradients in shared memory go by reference to servers that share it: only ids travel (Note
  // [shared memory]).
  const bool by_reference = routes_.push_reference(rows.values).has_value();
  const int64_t rows_per_call = std::max<int64_t>(
      1,
      (options_.max_request_bytes - kRequestOverhead) /
          (8 + (by_reference ? 0 : config.dim * static_cast<int64_t>(rows.values.element_size()))));
  std::vector<std::pair<int, v1::PushRequest>> requests;
  for (RoutedIds& share : split_shares(route_ids(rows.ids, num_servers()), rows_per_call)) {
    v1::PushRequest request;
    request.set_table(name);
    request.set_trainer(trainer_rank_);
    request.set_step(step);
    *request.mutable_attempt() = to_message(attempt_);
    rpc::encode_tensor(view_of(share.ids), request.mutable_ids(), "push.ids");
    if (by_reference) {
      const at::Tensor values = gather_rows(rows.values, share.positions);
      const auto where = regions_.find(values);
      if (where) {
        rpc::encode_shared_tensor(values, *where, request.mutable_grads(), "push.grads");
      } else {
        rpc::encode_tensor(values, request.mutable_grads(), "push.grads");
      }
    } else {
      const int64_t count = static_cast<int64_t>(share.positions.size());
      gather_rows_into(rows.values, share.positions,
                       rpc::tensor_in_message(request.mutable_grads(), {count, config.dim},
                                              rows.values.scalar_type(), "push.grads"));
    }
    requests.emplace_back(share.server, std::move(request));
  }
  const std::vector<BatchLimits> limits = all_batch_limits();
  BatchPlan now([&limits](int server) { return limits[static_cast<size_t>(server)]; });
  if (!options_.defer_pushes) {
    for (auto& [server, request] : requests) now.add(server, std::move(request));
  } else {
    // Deferred to the next call to each server (Note [batched calls]). A server's deferred pushes
    // stay within half a batch, leaving the other half to the lookups or steps that carry them:
    // those that would not fit go now.
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [server, request] : requests) {
      Deferred& deferred = deferred_[static_cast<size_t>(server)];
      const int64_t bytes = static_cast<int64_t>(request.ByteSizeLong()) + 16;
      if (!deferred.pushes.empty() &&
          deferred.bytes + bytes > limits[static_cast<size_t>(server)].request_bytes / 2) {
        for (v1::PushRequest& waiting : deferred.pushes) now.add(server, std::move(waiting));
        deferred = Deferred{};
      }
      deferred.pushes.push_back(std::move(request));
      deferred.bytes += bytes;
    }
  }
  send_pushes(now);
}

at::Tensor ClientImpl::Pending::wait() {
  timeline::Span span("lookup wait", "ps");
  if (span.active() && !names.empty()) span.arg({"table", names.front()});
  queue.wait_or_cancel(limit, kCompletionMargin);
  throw_first_failure(queue, operation());
  if (into) {
    const BatchCall& call = *calls[places.front().front().batch];
    const int index = places.front().front().index;
    const v1::Tensor* rows =
        index < call.response.lookups_size() ? &call.response.lookups(index).rows() : nullptr;
    if (rows == nullptr || !rows->has_shared() || rows->shared().key() != into->key() ||
        rows->shared().offset() != into->offset() || rows->shape_size() != 2 ||
        rows->shape(0) != out.size(0) || rows->shape(1) != out.size(1)) {
      throw BackendError("gradwire: " + operation() + ": server " + call.address +
                         " did not answer in the shared memory it was given");
    }
    return out;
  }
  const at::Tensor rows = this->rows().front();
  if (!out.defined()) return rows;
  out.copy_(rows);
  return out;
}

std::vector<at::Tensor> ClientImpl::Pending::rows() const {
  std::vector<at::Tensor> tables;
  for (size_t t = 0; t < plans.size(); ++t) {
    std::vector<ShareAnswer> answers;
    for (const PartPlace& place : places[t]) {
      const BatchCall& call = *calls[place.batch];
      if (place.index >= call.response.lookups_size()) {
        throw BackendError("gradwire: " + table_op("lookup", names[t]) + ": server " +
                           call.address + " answered " +
                           std::to_string(call.response.lookups_size()) + " lookups for " +
                           std::to_string(call.request.lookups_size()) + " asked");
      }
      answers.push_back(ShareAnswer{&call.response.lookups(place.index), &call.address});
    }
    tables.push_back(assemble_rows(names[t], plans[t], answers));
  }
  return tables;
}

std::string ClientImpl::Pending::operation() const {
  if (names.size() == 1) return table_op("lookup", names.front());
  std::string tables;
  for (const std::string& name : names) tables += (tables.empty() ? "'" : ", '") + name + "'";
  return "lookup of tables " + tables;
}

LookupPlan ClientImpl::plan_lookup(const std::string& name, const at::Tensor& ids) const {
  return ps::plan_lookup(usable_table(name).config, name, ids, num_servers(),
                         options_.max_request_bytes, options_.max_message_bytes);
}

}  // namespace gradwire::ps
