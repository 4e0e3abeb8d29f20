#include "ps/server/service.h"

#include <algorithm>
#include <thread>

#include "gradwire/common/error.h"
#include "ps/messages/service_messages.h"
#include "rpc/auth.h"
#include "rpc/wire.h"

namespace gradwire::ps {
namespace {

using std::chrono::milliseconds;

// Runs a handler body; exceptions become statuses (none may reach gRPC's threads).
template <typename Body>
grpc::Status guarded(const char* method, Body&& body) {
  try {
    return body();
  } catch (const InvalidArgument& error) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, error.what());
  } catch (const StaleAttemptError& error) {
    return grpc::Status(grpc::StatusCode::ABORTED, error.what());
  } catch (const ResourceLimitError& error) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, error.what());
  } catch (const TimeoutError& error) {
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, error.what());
  } catch (const CancelledError& error) {
    return grpc::Status(grpc::StatusCode::CANCELLED, error.what());
  } catch (const std::exception& error) {
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        std::string(method) + " failed on the server: " + error.what());
  }
}

// `stopping`: the service's begin_stop() flag, which cancels waits too.
CallInfo grpc_call(grpc::ServerContext& context, const std::atomic<bool>& stopping) {
  return CallInfo{context.deadline(),
                  [&context, &stopping] { return stopping.load() || context.IsCancelled(); }};
}

// Counts a gRPC handler as running while it lives (ParameterServerService::wait_for_calls).
class RunningCall {
 public:
  explicit RunningCall(std::atomic<int>& count) : count_(count) { count_.fetch_add(1); }
  RunningCall(const RunningCall&) = delete;
  RunningCall& operator=(const RunningCall&) = delete;
  ~RunningCall() { count_.fetch_sub(1); }

 private:
  std::atomic<int>& count_;
};

milliseconds since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
}

// Note [waiting steps]: a sync Step call that waits for other trainers holds a gRPC handler
// thread (and its stack) until the step is applied, for up to kMaxStepWait. The server has no
// thread quota (Note [handler threads] in server.cpp: at a quota gRPC refuses any call, the one
// that would complete a barrier included). Instead the service counts the Step calls waiting in
// any shard's barrier and refuses one more than max_waiting_steps with RESOURCE_EXHAUSTED naming
// the limit. Only a call that is about to wait takes a place (the shard asks, under its lock,
// through finish_step's may_wait): the call that completes a step never waits and is never
// refused, so the limit cannot keep a barrier from completing, and the waiters it releases free
// their places. A lookup of a dense table still waiting for its values waits as a Step does and is
// counted alike; other lookups and pushes do not block and are not counted.

// One Step call's place among the waiting ones: taken when its shard is about to wait, given
// back when the call returns.
class WaitingPlace {
 public:
  WaitingPlace(std::atomic<int64_t>& waiting, int64_t max) : waiting_(waiting), max_(max) {}
  WaitingPlace(const WaitingPlace&) = delete;
  WaitingPlace& operator=(const WaitingPlace&) = delete;
  ~WaitingPlace() {
    if (taken_) waiting_.fetch_sub(1);
  }

  // True when the call holds a place now; false when max_ calls already wait (seen() says how
  // many were counted).
  bool take() {
    if (taken_) return true;
    int64_t now = waiting_.load();
    do {
      seen_ = now;
      if (now >= max_) return false;
    } while (!waiting_.compare_exchange_weak(now, now + 1));
    taken_ = true;
    return true;
  }
  int64_t seen() const { return seen_; }

 private:
  std::atomic<int64_t>& waiting_;
  const int64_t max_;
  bool taken_ = false;
  int64_t seen_ = 0;
};

}  // namespace

std::chrono::steady_clock::time_point step_wait_deadline(
    std::chrono::system_clock::time_point call_deadline,
    std::chrono::system_clock::time_point system_now,
    std::chrono::steady_clock::time_point steady_now) {
  // Clamped to [0, kMaxStepWait] by comparing before subtracting: a call without a deadline
  // carries a far-future one, and a call channel's deadline is the trainer's word (any int64 ns:
  // INT64_MIN minus now wrapped to a wait of centuries).
  milliseconds left = kMaxStepWait;
  if (call_deadline <= system_now) {
    left = milliseconds(0);
  } else if (call_deadline < system_now + kMaxStepWait) {
    left = std::chrono::duration_cast<milliseconds>(call_deadline - system_now);
  }
  const milliseconds margin = std::min(left / 10, milliseconds(200));
  return steady_now + (left - margin);
}

std::string describe_missing_trainers(const std::string& table, int64_t step,
                                      const std::vector<int>& missing, int num_trainers,
                                      milliseconds waited) {
  // At most kNamedTrainers by number: the message stays small for any number of trainers.
  constexpr size_t kNamedTrainers = 16;
  std::string trainers;
  for (size_t i = 0; i < missing.size() && i < kNamedTrainers; ++i) {
    trainers += (trainers.empty() ? "" : ", ") + std::to_string(missing[i]);
  }
  if (missing.size() > kNamedTrainers) {
    trainers += " and " + std::to_string(missing.size() - kNamedTrainers) + " more";
  }
  if (trainers.empty()) trainers = "(unknown)";
  return "step " + std::to_string(step) + " of table '" + table + "': trainer(s) " + trainers +
         " of " + std::to_string(num_trainers) + " did not finish it within " +
         format_duration(waited);
}

ParameterServerService::ParameterServerService(std::string token, ServiceLimits limits,
                                               std::string shared_host, TableRegistry& tables,
                                               ServerCheckpoints& checkpoints, rpc::ChannelHub& hub,
                                               ServerMetrics& metrics, std::string thread_name)
    : token_(std::move(token)),
      thread_name_(std::make_shared<const std::string>(std::move(thread_name))),
      limits_(limits),
      shared_host_(std::move(shared_host)),
      shared_(limits.shared),
      tables_(tables),
      checkpoints_(checkpoints),
      hub_(hub),
      metrics_(metrics) {}

std::optional<v1::SharedBytes> ParameterServerService::shared_rows(const TableShard& shard) const {
  const at::Tensor rows = shard.kept_rows();
  return rows.defined() ? own_.find(rows) : std::nullopt;
}

rpc::SharedRegionCache* ParameterServerService::shared() {
  return shared_host_.empty() ? nullptr : &shared_;
}

std::shared_ptr<TableShard> ParameterServerService::find_table(const std::string& name,
                                                               grpc::Status* status) const {
  std::shared_ptr<TableShard> shard = tables_.find(name);
  if (!shard) {
    *status = grpc::Status(grpc::StatusCode::NOT_FOUND,
                           "table " + quoted_name(name) +
                               " does not exist on this server; create it first (CreateTable)");
  }
  return shard;
}

grpc::Status ParameterServerService::create_table(grpc::ServerContext* context,
                                                  const v1::CreateTableRequest* request,
                                                  v1::CreateTableResponse* response) {
  const RunningCall running(running_calls_);
  if (grpc::Status status = rpc::check_token(*context, token_); !status.ok()) return status;
  return guarded("CreateTable", [&] {
    const TableConfig config = from_message(request->config());
    validate(config);
    const int index = request->server_index();
    const int count = request->num_servers();
    if (count < 1 || index < 0 || index >= count) {
      throw InvalidArgument("server_index " + std::to_string(index) + " and num_servers " +
                            std::to_string(count) +
                            " do not name a server (need 0 <= " + "server_index < num_servers)");
    }
    // RESOURCE_EXHAUSTED naming the limit; checkpoints restored at start are checked alike.
    check_table_limits(config, index, count,
                       TableLimits{limits_.max_trainers, limits_.max_table_bytes});
    const CreatedTable table =
        tables_.create(config, index, count,
                       step_wait_deadline(context->deadline(), std::chrono::system_clock::now(),
                                          std::chrono::steady_clock::now()),
                       request->any_num_trainers());
    response->set_step(table.shard->step());
    response->set_created(table.created);
    response->set_awaiting_values(table.shard->awaiting_values());
    // A trainer of this host whose probe maps here may send references (Note [shared memory] in
    // ps/client/routes.h), and its batches may come over its call channel (Note [call channels]).
    response->set_shared_memory(!shared_host_.empty() && request->has_probe() &&
                                request->host() == shared_host_ && shared_.probe(request->probe()));
    response->set_channel(response->shared_memory() && request->has_channel() &&
                          open_channel(request->channel()));
    // A sync dense table's trainers on this host read its rows where the server keeps them: no
    // lookup, no gather on the server (Note [shared rows] in ps/client/routes.h: why it is safe).
    if (response->shared_memory() && config.kind == TableKind::kDense &&
        config.mode == UpdateMode::kSync) {
      table.shard->keep_rows_in(
          [this](at::IntArrayRef sizes) { return own_.allocate(sizes, at::kFloat); });
      if (const auto rows = shared_rows(*table.shard)) *response->mutable_rows() = *rows;
    }
    return grpc::Status::OK;
  });
}

grpc::Status ParameterServerService::lookup(const CallInfo& call,
                                            const v1::LookupRequest& request_message,
                                            v1::LookupResponse* response) {
  const v1::LookupRequest* request = &request_message;
  return guarded("Lookup", [&] {
    grpc::Status status;
    const std::shared_ptr<TableShard> shard = find_table(request->table(), &status);
    if (!shard) return status;
    const at::Tensor ids = rpc::decode_tensor(request->ids(), "lookup.ids", {at::kLong, 1});
    // Compared by division: ids x dim x 4 can overflow int64 for a huge dim.
    const int64_t row_bytes = shard->config().dim * 4;
    if (ids.numel() > limits_.max_message_bytes / row_bytes) {
      const int64_t answer_bytes = ids.numel() * row_bytes;
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "lookup of " + std::to_string(ids.numel()) + " ids of table " +
                              quoted_name(request->table()) + " (dim " +
                              std::to_string(shard->config().dim) + ") needs an answer of " +
                              std::to_string(answer_bytes) + " bytes, above max_message_bytes " +
                              std::to_string(limits_.max_message_bytes) +
                              "; look up fewer ids per call");
    }
    const auto values_deadline = step_wait_deadline(call.deadline, std::chrono::system_clock::now(),
                                                    std::chrono::steady_clock::now());
    // A dense shard awaiting trainer 0's values waits for them as a Step waits for trainers:
    // counted among the waiting calls (Note [waiting steps]), handing its channels to another
    // thread first (Note [hub threads]), and given up when the caller goes away or the server
    // stops.
    WaitingPlace place(waiting_steps_, limits_.max_waiting_steps);
    const StepWait values_wait{values_deadline, [&] { return call.cancelled && call.cancelled(); },
                               [&] {
                                 if (!place.take()) return false;
                                 if (call.will_wait) call.will_wait();
                                 return true;
                               }};
    const int wire = request->rows_dtype();
    if (request->has_rows_into()) {
      // Into the trainer's shared memory (Note [shared memory] in ps/client/routes.h): float32
      // rows written in place.
      if (wire != v1::FLOAT32 && wire != v1::DTYPE_UNSPECIFIED) {
        throw InvalidArgument("lookup.rows_into takes float32 rows, not " +
                              rpc::wire_dtype_name(wire));
      }
      if (shared() == nullptr) {
        throw InvalidArgument(
            "lookup.rows_into: this server takes no shared memory (it offered none at "
            "CreateTable)");
      }
      const at::Tensor into = shared_.view(request->rows_into(), {ids.numel(), shard->config().dim},
                                           at::kFloat, "lookup.rows_into");
      shard->lookup_into(ids, values_wait, into);
      rpc::encode_shared_tensor(into, request->rows_into(), response->mutable_rows(),
                                "lookup.rows");
      return grpc::Status::OK;
    }
    if (wire == v1::FLOAT32 || wire == v1::DTYPE_UNSPECIFIED) {
      // Gathered straight into the answer's bytes: no tensor between the rows and the wire.
      shard->lookup_into(
          ids, values_wait,
          rpc::tensor_in_message(response->mutable_rows(), {ids.numel(), shard->config().dim},
                                 at::kFloat, "lookup.rows"));
      return grpc::Status::OK;
    }
    at::Tensor rows = at::empty({ids.numel(), shard->config().dim}, at::kFloat);
    shard->lookup_into(ids, values_wait, rows);
    rpc::encode_tensor(wire == v1::FLOAT16 ? rows.to(at::kHalf) : rows.to(at::kBFloat16),
                       response->mutable_rows(), "lookup.rows");
    return grpc::Status::OK;
  });
}

grpc::Status ParameterServerService::assign(grpc::ServerContext* context,
                                            const v1::AssignRequest* request) {
  const RunningCall running(running_calls_);
  if (grpc::Status status = rpc::check_token(*context, token_); !status.ok()) return status;
  return guarded("Assign", [&] {
    grpc::Status status;
    const std::shared_ptr<TableShard> shard = find_table(request->table(), &status);
    if (!shard) return status;
    const at::Tensor ids = rpc::decode_tensor(request->ids(), "assign.ids", {at::kLong, 1});
    const at::Tensor rows =
        rpc::decode_tensor(request->rows(), "assign.rows", {at::kFloat, 2}, shared());
    shard->assign(request->trainer(), ids, rows, request->complete());
    return grpc::Status::OK;
  });
}

grpc::Status ParameterServerService::push(const v1::PushRequest& request_message) {
  const v1::PushRequest* request = &request_message;
  return guarded("Push", [&] {
    grpc::Status status;
    const std::shared_ptr<TableShard> shard = find_table(request->table(), &status);
    if (!shard) return status;
    if (request->grads().has_shared()) {
      // Gradients in the trainer's shared memory are viewed in place (Note [shared memory] in
      // ps/client/routes.h) and a sync shard keeps that view with ids of its own.
      at::Tensor ids = rpc::decode_tensor(request->ids(), "push.ids", {at::kLong, 1});
      at::Tensor grads =
          rpc::decode_tensor(request->grads(), "push.grads", {at::kFloat, 2}, shared());
      shard->push_owned(request->trainer(), request->step(), std::move(ids), std::move(grads),
                        from_message(request->attempt()));
    } else {
      // Read from the request's bytes: an async shard applies them at once, a sync one copies
      // what it keeps (no tensor between the wire and the rows for async tables).
      rpc::TensorExpectation ids_expect{at::kLong, 1};
      rpc::TensorExpectation grads_expect{at::kFloat, 2};
      ids_expect.in_place = grads_expect.in_place = true;
      shard->push(request->trainer(), request->step(),
                  rpc::decode_tensor(request->ids(), "push.ids", ids_expect),
                  rpc::decode_tensor(request->grads(), "push.grads", grads_expect),
                  from_message(request->attempt()));
    }
    if (shard->config().mode == UpdateMode::kAsync) checkpoints_.after_update(*shard);
    return grpc::Status::OK;
  });
}

grpc::Status ParameterServerService::step(const CallInfo& call,
                                          const v1::StepRequest& request_message,
                                          v1::StepResponse* response) {
  const v1::StepRequest* request = &request_message;
  return guarded("Step", [&] {
    grpc::Status status;
    const std::shared_ptr<TableShard> shard = find_table(request->table(), &status);
    if (!shard) return status;
    const auto start = std::chrono::steady_clock::now();
    const auto deadline =
        step_wait_deadline(call.deadline, std::chrono::system_clock::now(), start);
    // Note [step slices]: the shard waits in slices and asks whether the call was cancelled (the
    // caller went away, or shutdown's grace passed), so that such a call frees its thread instead
    // of holding shutdown() until the deadline.
    WaitingPlace place(waiting_steps_, limits_.max_waiting_steps);  // Note [waiting steps]
    const StepOutcome outcome =
        shard->finish_step(request->trainer(), request->step(), from_message(request->attempt()),
                           StepWait{deadline, [&] { return call.cancelled(); },
                                    [&] {
                                      if (!place.take()) return false;
                                      if (call.will_wait) call.will_wait();  // Note [hub threads]
                                      return true;
                                    }});
    if (!outcome.refused) {
      metrics_.step(shard->config().name, std::chrono::steady_clock::now() - start,
                    outcome.applied);
    }
    if (outcome.refused) {
      return grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          "step " + std::to_string(request->step()) + " of table " + quoted_name(request->table()) +
              " from trainer " + std::to_string(request->trainer()) +
              " was refused: " + std::to_string(place.seen()) +
              " Step call(s) already wait for other trainers on this server, its "
              "max_waiting_steps " +
              std::to_string(limits_.max_waiting_steps) +
              "; nothing was recorded. Call Step again later, or raise --max-waiting-steps "
              "(ServerOptions::max_waiting_steps)");
    }
    if (outcome.cancelled) {
      return grpc::Status(grpc::StatusCode::CANCELLED,
                          "step " + std::to_string(request->step()) + " of table " +
                              quoted_name(request->table()) +
                              " was cancelled (the caller went away or the server is "
                              "shutting down)");
    }
    if (!outcome.applied) {
      return grpc::Status(
          grpc::StatusCode::DEADLINE_EXCEEDED,
          describe_missing_trainers(shard->config().name, request->step(), outcome.missing_trainers,
                                    shard->num_trainers(), since(start)));
    }
    response->set_step(outcome.step);
    // Where the rows are, for a trainer that reads them in place: only over its call channel, so
    // the server's own memory is never named to a caller that did not pass the probe.
    if (call.shares_memory) {
      if (const auto rows = shared_rows(*shard)) *response->mutable_rows() = *rows;
    }
    checkpoints_.after_update(*shard);
    return grpc::Status::OK;
  });
}

grpc::Status ParameterServerService::batch_grpc(grpc::ServerContext* context,
                                                const v1::BatchRequest* request,
                                                v1::BatchResponse* response) {
  const RunningCall running(running_calls_);
  if (grpc::Status status = rpc::check_token(*context, token_); !status.ok()) return status;
  return batch(grpc_call(*context, stopping_), *request, response);
}

grpc::Status ParameterServerService::checkpoint(grpc::ServerContext* context,
                                                v1::CheckpointResponse* response) {
  const RunningCall running(running_calls_);
  if (grpc::Status status = rpc::check_token(*context, token_); !status.ok()) return status;
  return guarded("Checkpoint", [&] {
    if (!checkpoints_.enabled()) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "this server has no checkpoint directory; start it with "
                          "--checkpoint-dir (ServerOptions::checkpoint_dir)");
    }
    for (const std::string& path : checkpoints_.write_all(tables_.all())) {
      response->add_files(path);
    }
    return grpc::Status::OK;
  });
}

grpc::Status ParameterServerService::resume(grpc::ServerContext* context,
                                            const v1::ResumeRequest* request,
                                            v1::ResumeResponse* response) {
  const RunningCall running(running_calls_);
  if (grpc::Status status = rpc::check_token(*context, token_); !status.ok()) return status;
  return guarded("Resume", [&] {
    grpc::Status status;
    const std::shared_ptr<TableShard> shard = find_table(request->table(), &status);
    if (!shard) return status;
    const Attempt attempt = from_message(request->attempt());
    const int trainer = request->trainer();
    const int64_t step = request->step();
    if (step < 0) throw InvalidArgument("resume at step " + std::to_string(step) + "; need >= 0");
    if (const int trainers = request->num_trainers(); trainers != 0) {
      // An elastic job's new membership, within the limits CreateTable checks.
      TableConfig asked = shard->current_config();
      asked.num_trainers = trainers;
      check_table_limits(asked, shard->server_index(), shard->num_servers(),
                         TableLimits{limits_.max_trainers, limits_.max_table_bytes});
      shard->set_trainers(trainers, attempt);
    }
    if (shard->admit_at(trainer, step, attempt)) {
      response->set_step(shard->step());
      metrics_.resume(shard->config().name, /*rewound=*/false);
      return grpc::Status::OK;
    }
    const TableConfig& config = shard->config();
    const int index = shard->server_index();
    const int count = shard->num_servers();
    std::optional<ShardSnapshot> snapshot = checkpoints_.read_step(config.name, index, count, step);
    if (!snapshot) {
      std::string held;
      for (const int64_t s : checkpoints_.steps_held(config.name, index, count)) {
        held += (held.empty() ? "" : ", ") + std::to_string(s);
      }
      return grpc::Status(
          grpc::StatusCode::FAILED_PRECONDITION,
          "table '" + config.name + "' (shard " + std::to_string(index) + " of " +
              std::to_string(count) + ") is at step " + std::to_string(shard->step()) +
              " and this server holds no checkpoint of step " + std::to_string(step) +
              (checkpoints_.enabled()
                   ? " (it holds " + (held.empty() ? std::string("none") : "steps " + held) +
                         " in " + checkpoints_.dir() + ")"
                   : " (it has no --checkpoint-dir)") +
              "; resume from a step the servers checkpointed (checkpoint the trainers and the "
              "servers at the same steps: --checkpoint-every N, or Client::checkpoint())");
    }
    const int64_t now = shard->rewind(std::move(*snapshot), trainer, attempt);
    checkpoints_.forget_after(config.name, index, count, now);
    response->set_step(now);
    metrics_.resume(config.name, /*rewound=*/true);
    return grpc::Status::OK;
  });
}

bool ParameterServerService::wait_for_calls(std::chrono::steady_clock::time_point until) const {
  while (running_calls_.load() > 0) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace gradwire::ps
