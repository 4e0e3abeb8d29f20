// The client's implementation (internal to src/ps/client): the ClientImpl class, shared by
// client.cpp (connecting, the tables' lifecycle: create, resume, assign, checkpoint),
// client_data.cpp (lookups, pushes) and client_batches.cpp (flush, step). Calls to several
// servers run in parallel on a CallQueue the waiting thread waits on (client_queue.h), each by
// the route Routes chose for it (routes.h, Note [call routes]). Lookups, pushes and steps travel
// in batches (batch_plan.h): one call per server per round trip. Pushes stay in flight (or
// deferred, ClientOptions::defer_pushes) until flush() or step().
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "batch_plan.h"
#include "client_calls.h"
#include "client_timeline.h"
#include "gradwire/common/error.h"
#include "gradwire/ps/client.h"
#include "lookup_plan.h"
#include "ps/messages/service_messages.h"
#include "routes.h"
#include "rpc/channel.h"
#include "rpc/proto/ps.grpc.pb.h"
#include "rpc/retry.h"
#include "rpc/shared_memory.h"
#include "rpc/status.h"

namespace gradwire::ps {

// gRPC completes a call by its deadline; waiting this much longer only guards against a bug.
inline constexpr std::chrono::milliseconds kCompletionMargin{5000};

// Where a CreateTable or Step answer says the server keeps the table's rows (Note [shared rows]).
template <typename Response>
std::optional<v1::SharedBytes> rows_of(const Response& response) {
  if (!response.has_rows()) return std::nullopt;
  return response.rows();
}

inline std::string table_op(const char* verb, const std::string& table) {
  return std::string(verb) + " of table '" + table + "'";
}

class ClientImpl final : public Client {
 public:
  using Clock = std::chrono::steady_clock;
  using milliseconds = std::chrono::milliseconds;

  explicit ClientImpl(const ClientOptions& options);
  ~ClientImpl() override;

  int num_servers() const override { return routes_.size(); }
  const std::vector<std::string>& servers() const override { return routes_.addresses(); }
  int rank() const override { return trainer_rank_; }
  int world_size() const override { return num_trainers_; }

  void create_table(const TableConfig& config) override;
  void resume(int64_t step) override;
  void regroup(int64_t step, int rank, int world_size, int64_t attempt) override;
  std::vector<std::string> table_names() const override;
  const TableConfig& table(const std::string& name) const override;
  at::Tensor lookup(const std::string& name, const at::Tensor& ids) override;
  std::vector<at::Tensor> lookup_many(const std::vector<TableIds>& lookups) override;
  std::unique_ptr<PendingLookup> start_lookup(const std::string& name, const at::Tensor& ids,
                                              at::ScalarType wire, const at::Tensor& out) override;
  void assign(const std::string& name, const at::Tensor& ids, const at::Tensor& rows) override;
  bool awaiting_values(const std::string& name) const override;
  void push(const std::string& name, const at::Tensor& ids, const at::Tensor& grads) override;
  void flush() override;
  void step() override;
  int64_t step_count(const std::string& name) const override;
  void checkpoint() override;
  at::Tensor shared_tensor(at::IntArrayRef sizes, at::ScalarType dtype) override;
  at::Tensor server_rows(const std::string& name, int server) override;
  bool shares_memory_with(int server) const override;
  std::string transport(int server) const override;

 private:
  struct TableState {
    TableConfig config;
    int64_t step = 0;
    std::string disagreement;      // non-empty: the servers' steps differ (see create_table)
    bool awaiting_values = false;  // a dense table some server waits to be assigned
    // Per server, where it keeps the rows in shared memory (Note [shared rows] in routes.h).
    std::vector<std::optional<v1::SharedBytes>> server_rows;
  };

  // Lookups in flight (start_lookup, lookup_many): the tables' plans and the batches that carry
  // them; wait() polls them on the caller's thread.
  struct Pending final : PendingLookup {
    std::vector<std::string> names;
    std::vector<LookupPlan> plans;
    std::vector<std::vector<PartPlace>> places;        // per table, where each share's lookup went
    std::vector<std::unique_ptr<BatchCall>> requests;  // before they start
    std::vector<int> servers;                          // requests[i] goes to servers[i]
    CallQueue<BatchCall> queue;
    std::vector<BatchCall*> calls;  // once started, in the order of requests
    Clock::time_point limit;

    at::Tensor out;                       // the caller's, if given
    std::optional<v1::SharedBytes> into;  // where the server writes the rows itself

    at::Tensor wait() override;
    // Every table's rows from the answered calls.
    std::vector<at::Tensor> rows() const;
    std::string operation() const;
  };

  // The lookups' plans and the batches carrying them to each server, with the pushes deferred to
  // those servers when `carry_pushes` (then *carried says whether there were some: the caller
  // calls carried_done() once their calls ended); `out` and `wire` as start_lookup's (one table).
  std::unique_ptr<Pending> plan_lookups(const std::vector<TableIds>& lookups, at::ScalarType wire,
                                        const at::Tensor& out, bool carry_pushes, bool* carried);

  LookupPlan plan_lookup(const std::string& name, const at::Tensor& ids) const;

  // A copy of every table's state, taken under the lock.
  std::vector<std::pair<std::string, TableState>> tables_now() const;
  // resume() and regroup(): every table's Resume on every server at `step` (sync tables; all of
  // them when `num_trainers` is not 0, which they take), then the client's counters.
  void resume_tables(int64_t step, int num_trainers);

  // The table's state, BackendError while its servers disagree on the step.
  TableState usable_table(const std::string& name) const;

  // Starts `call` (context and request set) to `server` on `queue`, by the route Routes chooses
  // (Note [call routes]).
  template <typename Call>
  Call& start_call(CallQueue<Call>& queue, std::unique_ptr<Call> call, int server) {
    call->server = server;
    call->started = CallBase::Clock::now();  // its span's start on the timeline
    routes_.start(server, *call, queue.grpc());
    return queue.add(std::move(call));
  }

  std::vector<BatchLimits> all_batch_limits() const;
  // Calls for the batches of `plan` whose `last` is `last` (all of them: unset), address and
  // answer size set, the requests moved out of the plan.
  struct BatchCalls {
    std::vector<std::unique_ptr<BatchCall>> calls;
    std::vector<int> servers;     // calls[i] goes to servers[i]
    std::vector<size_t> batches;  // and carries the plan's batch batches[i]
  };
  BatchCalls batch_calls(BatchPlan& plan, std::optional<bool> last) const;
  // Starts the batches of `plan` as pushes in flight (flush() and step() wait for them).
  void send_pushes(BatchPlan& plan);
  // Moves the pushes deferred to `servers` into `plan`, in order per server; true when there were
  // some. `by_lookup`: a lookup carries them, counted as carrying pushes until carried_done().
  bool add_deferred(BatchPlan& plan, const std::vector<int>& servers, bool by_lookup = false);
  void carried_done();
  // Waits for the pushes in flight (and for lookups of other threads carrying deferred pushes)
  // and throws the first failure.
  void wait_for_pushes();

  const TableState& find_table(const std::string& name) const;

  std::vector<std::unique_ptr<CallQueue<BatchCall>>> take_pushes();

  std::vector<int> all_servers() const;

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
  // the first error.
  template <typename Call>
  std::vector<Call*> run_idempotent(CallQueue<Call>& queue,
                                    std::vector<std::unique_ptr<Call>> requests,
                                    const std::vector<int>& servers, const std::string& operation) {
    const Clock::time_point started = Clock::now();
    const Clock::time_point deadline = started + options_.call_deadline;
    const auto system_deadline = std::chrono::system_clock::now() + options_.call_deadline;
    std::vector<Call*> calls;
    for (size_t i = 0; i < requests.size(); ++i) {
      rpc::prepare_context(requests[i]->context, token_, system_deadline);
      calls.push_back(&start_call(queue, std::move(requests[i]), servers[i]));
    }
    queue.wait_or_cancel(deadline + kCompletionMargin, kCompletionMargin);
    for (size_t i = 0; i < calls.size(); ++i) {
      int retries = 0;
      while (!calls[i]->status.ok()) {
        const Call& failed = *calls[i];
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
        const std::optional<milliseconds> delay =
            rpc::next_retry_delay(failed.status.error_code(), retries, retry_, left);
        if (!delay || !retryable(failed)) {
          rpc::throw_rpc_error(failed.status, operation, failed.address,
                               std::chrono::duration_cast<milliseconds>(Clock::now() - started));
        }
        if (timeline::enabled()) record_call_retry(failed, retries + 1, *delay);
        std::this_thread::sleep_for(*delay);
        ++retries;
        // A fresh call with the same request (a context serves one call only).
        auto again = std::make_unique<Call>();
        again->request = failed.request;
        again->answer_bytes = failed.answer_bytes;
        rpc::prepare_context(again->context, token_, system_deadline);
        calls[i] = &start_call(queue, std::move(again), servers[i]);
        queue.wait_or_cancel(deadline + kCompletionMargin, kCompletionMargin);
      }
    }
    return calls;
  }

  ClientOptions options_;
  std::string token_;
  int trainer_rank_ = 0;
  int num_trainers_ = 1;
  milliseconds step_timeout_{0};
  Attempt attempt_;
  rpc::RetryPolicy retry_;

  rpc::SharedRegions regions_;         // shared_tensor()'s memory (thread-safe)
  Routes routes_{options_, regions_};  // stubs and channels per server (thread-safe)
  // The servers' rows we read (thread-safe).
  rpc::SharedRegionCache server_regions_{rpc::SharedRegionLimits::unlimited(),
                                         /*servers_rows=*/true};

  mutable std::mutex mutex_;  // guards tables_, pushes_ and deferred_
  std::map<std::string, TableState> tables_;
  std::vector<std::unique_ptr<CallQueue<BatchCall>>> pushes_;  // batches of pushes in flight
  // Per server, the pushes waiting for this client's next call to it (defer_pushes), and their
  // bytes in a batch.
  struct Deferred {
    std::vector<v1::PushRequest> pushes;
    int64_t bytes = 0;
  };
  std::vector<Deferred> deferred_;
  // Lookups in flight that carry deferred pushes (perhaps another thread's): flush() and step()
  // wait for them too. Under mutex_.
  int carrying_ = 0;
  std::condition_variable carried_;
};

}  // namespace gradwire::ps
