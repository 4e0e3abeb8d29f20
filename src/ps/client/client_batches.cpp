// The client's batches (client_impl.h, Note [batched calls] in batch_plan.h): the calls that
// carry them, the pushes deferred to each server and the pushes in flight, flush() and step().
#include "client_impl.h"
#include "rpc/auth.h"

namespace gradwire::ps {

std::vector<BatchLimits> ClientImpl::all_batch_limits() const {
  std::vector<BatchLimits> limits;
  for (int server = 0; server < num_servers(); ++server) {
    limits.push_back(routes_.batch_limits(server));
  }
  return limits;
}

ClientImpl::BatchCalls ClientImpl::batch_calls(BatchPlan& plan, std::optional<bool> last) const {
  BatchCalls out;
  for (size_t i = 0; i < plan.batches().size(); ++i) {
    BatchPlan::Batch& batch = plan.batches()[i];
    if (last && batch.last != *last) continue;
    auto call = std::make_unique<BatchCall>();
    call->request = std::move(batch.request);
    call->answer_bytes = batch.answer_bytes + kBatchFraming;
    out.calls.push_back(std::move(call));
    out.servers.push_back(batch.server);
    out.batches.push_back(i);
  }
  return out;
}

void ClientImpl::send_pushes(BatchPlan& plan) {
  if (plan.empty()) return;
  auto queue = std::make_unique<CallQueue<BatchCall>>();
  BatchCalls batches = batch_calls(plan, std::nullopt);
  const auto deadline = std::chrono::system_clock::now() + options_.call_deadline;
  for (size_t i = 0; i < batches.calls.size(); ++i) {
    const int server = batches.servers[i];
    rpc::prepare_context(batches.calls[i]->context, token_, deadline);
    start_call(*queue, std::move(batches.calls[i]), server);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  pushes_.push_back(std::move(queue));
}

bool ClientImpl::add_deferred(BatchPlan& plan, const std::vector<int>& servers, bool by_lookup) {
  std::vector<std::pair<int, std::vector<v1::PushRequest>>> taken;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const int server : servers) {
      Deferred& deferred = deferred_[static_cast<size_t>(server)];
      if (deferred.pushes.empty()) continue;
      taken.emplace_back(server, std::move(deferred.pushes));
      deferred = Deferred{};
    }
    // Counted in the same lock that took them: a flush() that found nothing to send waits.
    if (by_lookup && !taken.empty()) ++carrying_;
  }
  // Outside the lock: the plan asks routes_.batch_limits().
  for (auto& [server, pushes] : taken) {
    for (v1::PushRequest& push : pushes) plan.add(server, std::move(push));
  }
  return !taken.empty();
}

void ClientImpl::carried_done() {
  std::lock_guard<std::mutex> lock(mutex_);
  --carrying_;
  carried_.notify_all();
}

void ClientImpl::wait_for_pushes() {
  const Clock::time_point limit = Clock::now() + options_.call_deadline + kCompletionMargin;
  {
    // A lookup carrying pushes ends within its deadline; its errors are its own.
    std::unique_lock<std::mutex> lock(mutex_);
    if (!carried_.wait_until(lock, limit, [this] { return carrying_ == 0; })) {
      throw TimeoutError("gradwire: push: lookups carrying deferred pushes did not end within " +
                         format_duration(std::chrono::duration_cast<milliseconds>(
                             options_.call_deadline + kCompletionMargin)));
    }
  }
  std::vector<std::unique_ptr<CallQueue<BatchCall>>> pushes = take_pushes();
  for (auto& queue : pushes) queue->wait_or_cancel(limit, kCompletionMargin);
  for (auto& queue : pushes) throw_first_failure(*queue, "push");
}

void ClientImpl::flush() {
  timeline::Span span("flush", "ps");
  BatchPlan plan([this](int server) { return routes_.batch_limits(server); });
  add_deferred(plan, all_servers());
  send_pushes(plan);
  wait_for_pushes();
}

void ClientImpl::step() {
  // The Step calls to each server are async spans "step server N" (client_timeline.h); this one
  // covers the pushes' wait too.
  timeline::Span span("step", "ps");
  // Pushes sent before (not deferred) are accepted before the steps go out: calls to one server
  // are not ordered.
  wait_for_pushes();
  const std::vector<std::pair<std::string, TableState>> tables = tables_now();
  // Async tables with bounded staleness wait in Step too (until the slowest is near).
  std::vector<const std::pair<std::string, TableState>*> stepped;
  std::string operation;
  for (const auto& entry : tables) {
    const TableState& state = entry.second;
    if (!state.disagreement.empty()) throw BackendError(state.disagreement);
    if (state.config.mode == UpdateMode::kSync || state.config.staleness > 0) {
      stepped.push_back(&entry);
      operation += (operation.empty() ? "step " : " and step ") + std::to_string(state.step) +
                   " of table '" + entry.first + "'";
    }
  }
  // One batch per server: the pushes deferred to it, then the steps of every table (Note
  // [batched calls]).
  BatchPlan plan([this](int server) { return routes_.batch_limits(server); });
  add_deferred(plan, all_servers());
  std::vector<std::vector<PartPlace>> places(stepped.size());
  for (int server = 0; server < num_servers(); ++server) {
    for (size_t t = 0; t < stepped.size(); ++t) {
      v1::StepRequest request;
      request.set_table(stepped[t]->first);
      request.set_trainer(trainer_rank_);
      request.set_step(stepped[t]->second.step);
      *request.mutable_attempt() = to_message(attempt_);
      places[t].push_back(plan.add(server, std::move(request)));
    }
  }
  if (span.active()) {
    span.arg({"tables", static_cast<int64_t>(stepped.size())});
    if (!stepped.empty()) span.arg({"table", stepped.front()->first});
    if (!stepped.empty()) span.arg({"step", stepped.front()->second.step});
  }
  if (operation.empty()) operation = "push";
  const milliseconds timeout = stepped.empty() ? options_.call_deadline : step_timeout_;
  CallQueue<BatchCall> queue;
  std::vector<BatchCall*> calls(plan.batches().size());
  // Where a server's parts did not fit one batch, the earlier ones are answered first.
  for (const std::optional<bool> wave : plan.split()
                                            ? std::vector<std::optional<bool>>{false, true}
                                            : std::vector<std::optional<bool>>{std::nullopt}) {
    BatchCalls batches = batch_calls(plan, wave);
    const auto deadline = std::chrono::system_clock::now() + timeout;
    for (size_t i = 0; i < batches.calls.size(); ++i) {
      const int server = batches.servers[i];
      rpc::prepare_context(batches.calls[i]->context, token_, deadline);
      calls[batches.batches[i]] = &start_call(queue, std::move(batches.calls[i]), server);
    }
    queue.wait_or_cancel(Clock::now() + timeout + kCompletionMargin, kCompletionMargin);
    throw_first_failure(queue, operation);
  }
  for (size_t t = 0; t < stepped.size(); ++t) {
    // Where each server keeps the rows now (a restarted server's are elsewhere).
    std::vector<std::optional<v1::SharedBytes>> rows;
    for (const PartPlace& place : places[t]) {
      const BatchCall& call = *calls[place.batch];
      if (place.index >= call.response.steps_size()) {
        throw BackendError("gradwire: " + operation + ": server " + call.address + " answered " +
                           std::to_string(call.response.steps_size()) + " steps for " +
                           std::to_string(call.request.steps_size()) + " asked");
      }
      rows.push_back(rows_of(call.response.steps(place.index)));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    tables_[stepped[t]->first].server_rows = std::move(rows);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [name, state] : tables) tables_[name].step = state.step + 1;
}

}  // namespace gradwire::ps
