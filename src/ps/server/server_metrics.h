// What one parameter server counts for Prometheus (server-internal; the names, labels and
// meanings are listed in docs/observability.md): its calls per method and transport (requests,
// bytes, latency, refusals by cause), the Batch parts, the steps and their waits per table,
// checkpoint writes, resumes, and gauges read at scrape time (pending bytes against their caps,
// tables, waiting calls, channels, checkpoint ages, the start time).
//
// Thread safety: every member may be called from any thread. The series of each method and
// transport are resolved at construction, so recording a call is a few relaxed atomic additions;
// per-table series are found under their family's mutex (once per Step part, checkpoint write or
// Resume).
#pragma once

#include <grpcpp/support/status.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/metrics.h"

namespace gradwire::ps {

// The service's methods as the metrics name them (the gRPC method's name).
enum class CallMethod { kCreateTable, kCheckpoint, kResume, kAssign, kBatch };
inline constexpr int kCallMethods = 5;
// How a call arrived: gRPC, or a trainer's shared-memory call channel (Batch only).
enum class CallTransport { kGrpc, kChannel };
inline constexpr int kCallTransports = 2;

const char* method_label(CallMethod method);
const char* transport_label(CallTransport transport);
// The cause label of a refused call, from its status code: "token", "invalid_argument",
// "not_found", "limit", "stale_attempt", "deadline", "cancelled", "failed_precondition",
// "internal". Pure.
const char* refusal_cause(grpc::StatusCode code);

// Read at scrape time from the server's objects (set by the server before it serves).
struct ServerGauges {
  struct Table {
    std::string name;
    int64_t step = 0;
    int64_t pending_bytes = 0;
    int64_t max_pending_bytes = 0;
  };
  std::function<std::vector<Table>()> tables;
  std::function<int64_t()> total_pending_bytes;
  int64_t max_total_pending_bytes = 0;
  std::function<int64_t()> waiting_calls;
  int64_t max_waiting_calls = 0;
  std::function<int64_t()> channels;
  int64_t restored_tables = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // The gauges read at scrape time; call once, before the server serves.
  void set_gauges(ServerGauges gauges);

  // One call answered: its request's and answer's sizes in bytes (the answer's 0 when refused),
  // how long it ran, and its status (not OK: counted among the refusals by cause).
  void call(CallMethod method, CallTransport transport, size_t request_bytes, size_t answer_bytes,
            std::chrono::steady_clock::duration took, grpc::StatusCode code);
  // The parts of one Batch call.
  void batch_parts(CallTransport transport, int lookups, int pushes, int steps);
  // A Step part of `table` answered after waiting `waited` in the barrier; `applied`: the step
  // it finished is applied.
  void step(const std::string& table, std::chrono::steady_clock::duration waited, bool applied);
  // A checkpoint write of `table`'s shard that took `took`; `ok` false: it failed.
  void checkpoint(const std::string& table, std::chrono::steady_clock::duration took, bool ok);
  // A Resume of `table`: `rewound` when it reloaded a checkpoint, else the table was at the step.
  void resume(const std::string& table, bool rewound);

  // Every family's values now.
  std::vector<metrics::FamilyValue> collect() const;

 private:
  struct CallSeries {
    metrics::Counter* requests = nullptr;
    metrics::Histogram* latency = nullptr;
    metrics::Histogram* request_bytes = nullptr;
    metrics::Histogram* answer_bytes = nullptr;
  };
  std::vector<metrics::FamilyValue> collect_gauges() const;

  metrics::Registry registry_;
  metrics::Family<metrics::Counter>& requests_;
  metrics::Family<metrics::Histogram>& latency_;
  metrics::Family<metrics::Histogram>& request_bytes_;
  metrics::Family<metrics::Histogram>& answer_bytes_;
  metrics::Family<metrics::Counter>& refusals_;
  metrics::Family<metrics::Counter>& parts_;
  metrics::Family<metrics::Counter>& steps_;
  metrics::Family<metrics::Histogram>& step_wait_;
  metrics::Family<metrics::Histogram>& checkpoint_duration_;
  metrics::Family<metrics::Counter>& checkpoint_failures_;
  metrics::Family<metrics::Counter>& resumes_;
  std::array<std::array<CallSeries, kCallTransports>, kCallMethods> calls_;
  const double start_time_;  // seconds since the epoch

  ServerGauges gauges_;  // set once before serving
  mutable std::mutex checkpoint_mutex_;
  std::map<std::string, double> last_checkpoint_;  // table -> epoch seconds; by checkpoint_mutex_
};

}  // namespace gradwire::ps
