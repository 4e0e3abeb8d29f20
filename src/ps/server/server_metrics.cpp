#include "ps/server/server_metrics.h"

namespace gradwire::ps {
namespace {

using metrics::FamilyValue;
using metrics::SeriesValue;
using metrics::Type;

// Latencies from 50 us (a small lookup over a call channel) to 5 min (a sync step's longest wait).
const std::vector<double> kSecondsBounds{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                         0.01,    0.025,  0.05,    0.1,    0.25,  0.5,    1,
                                         2.5,     5,      10,      30,     60,    300};
// Message sizes from 64 B to 64 MiB (the largest answer by default), by powers of 4.
const std::vector<double> kBytesBounds{64,     256,     1024,    4096,     16384,   65536,
                                       262144, 1048576, 4194304, 16777216, 67108864};

double to_seconds(std::chrono::steady_clock::duration duration) {
  return std::chrono::duration<double>(duration).count();
}

double epoch_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

SeriesValue gauge_value(metrics::Labels labels, double value) {
  SeriesValue series;
  series.labels = std::move(labels);
  series.value = value;
  return series;
}

}  // namespace

const char* method_label(CallMethod method) {
  switch (method) {
    case CallMethod::kCreateTable:
      return "CreateTable";
    case CallMethod::kCheckpoint:
      return "Checkpoint";
    case CallMethod::kResume:
      return "Resume";
    case CallMethod::kAssign:
      return "Assign";
    case CallMethod::kBatch:
      return "Batch";
  }
  return "unknown";
}

const char* transport_label(CallTransport transport) {
  return transport == CallTransport::kChannel ? "channel" : "grpc";
}

const char* refusal_cause(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::UNAUTHENTICATED:
      return "token";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "invalid_argument";
    case grpc::StatusCode::NOT_FOUND:
      return "not_found";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "limit";
    case grpc::StatusCode::ABORTED:
      return "stale_attempt";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "deadline";
    case grpc::StatusCode::CANCELLED:
      return "cancelled";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "failed_precondition";
    default:
      return "internal";
  }
}

ServerMetrics::ServerMetrics()
    : requests_(registry_.counter("gradwire_ps_requests_total",
                                  "Calls answered, by method and transport (grpc, channel).",
                                  {"method", "transport"})),
      latency_(registry_.histogram("gradwire_ps_request_duration_seconds",
                                   "Time from a call's start in its handler to its answer.",
                                   kSecondsBounds, {"method", "transport"})),
      request_bytes_(registry_.histogram("gradwire_ps_request_bytes",
                                         "Size of each call's request message in bytes.",
                                         kBytesBounds, {"method", "transport"})),
      answer_bytes_(registry_.histogram(
          "gradwire_ps_response_bytes",
          "Size of each answered call's response message in bytes (refused calls: 0).",
          kBytesBounds, {"method", "transport"})),
      refusals_(registry_.counter(
          "gradwire_ps_refusals_total",
          "Calls answered with an error, by cause (token, invalid_argument, not_found, limit, "
          "stale_attempt, deadline, cancelled, failed_precondition, internal).",
          {"method", "transport", "cause"})),
      parts_(registry_.counter("gradwire_ps_batch_parts_total",
                               "Parts of Batch calls received, by kind (lookup, push, step).",
                               {"transport", "part"})),
      steps_(registry_.counter(
          "gradwire_ps_step_calls_total",
          "Step parts answered per table; applied=true when the step they finished is applied.",
          {"table", "applied"})),
      step_wait_(registry_.histogram("gradwire_ps_step_wait_seconds",
                                     "How long each Step part waited for the other trainers (sync) "
                                     "or the slowest (staleness).",
                                     kSecondsBounds, {"table"})),
      checkpoint_duration_(registry_.histogram(
          "gradwire_ps_checkpoint_duration_seconds",
          "Time to write one table shard's checkpoint file (successful writes).", kSecondsBounds,
          {"table"})),
      checkpoint_failures_(registry_.counter("gradwire_ps_checkpoint_failures_total",
                                             "Checkpoint writes that failed, per table.",
                                             {"table"})),
      resumes_(registry_.counter(
          "gradwire_ps_resumes_total",
          "Resume calls of restarted trainers per table; outcome=rewound when the table reloaded a "
          "checkpoint, kept when it was at the step already.",
          {"table", "outcome"})),
      start_time_(epoch_seconds()) {
  for (int m = 0; m < kCallMethods; ++m) {
    for (int t = 0; t < kCallTransports; ++t) {
      const auto method = static_cast<CallMethod>(m);
      const auto transport = static_cast<CallTransport>(t);
      // Only Batch comes over a channel: no empty series for the others.
      if (transport == CallTransport::kChannel && method != CallMethod::kBatch) continue;
      const std::vector<std::string> labels{method_label(method), transport_label(transport)};
      calls_[m][t] = CallSeries{&requests_.with(labels), &latency_.with(labels),
                                &request_bytes_.with(labels), &answer_bytes_.with(labels)};
    }
  }
  registry_.add_collector([this] { return collect_gauges(); });
}

void ServerMetrics::set_gauges(ServerGauges gauges) { gauges_ = std::move(gauges); }

void ServerMetrics::call(CallMethod method, CallTransport transport, size_t request_bytes,
                         size_t answer_bytes, std::chrono::steady_clock::duration took,
                         grpc::StatusCode code) {
  const CallSeries& series = calls_[static_cast<int>(method)][static_cast<int>(transport)];
  if (series.requests == nullptr) return;  // no such route
  series.requests->add();
  series.latency->observe(to_seconds(took));
  series.request_bytes->observe(static_cast<double>(request_bytes));
  series.answer_bytes->observe(static_cast<double>(answer_bytes));
  if (code != grpc::StatusCode::OK) {
    refusals_.with({method_label(method), transport_label(transport), refusal_cause(code)}).add();
  }
}

void ServerMetrics::batch_parts(CallTransport transport, int lookups, int pushes, int steps) {
  const std::string label = transport_label(transport);
  if (lookups > 0) parts_.with({label, "lookup"}).add(static_cast<uint64_t>(lookups));
  if (pushes > 0) parts_.with({label, "push"}).add(static_cast<uint64_t>(pushes));
  if (steps > 0) parts_.with({label, "step"}).add(static_cast<uint64_t>(steps));
}

void ServerMetrics::step(const std::string& table, std::chrono::steady_clock::duration waited,
                         bool applied) {
  steps_.with({table, applied ? "true" : "false"}).add();
  step_wait_.with({table}).observe(to_seconds(waited));
}

void ServerMetrics::checkpoint(const std::string& table, std::chrono::steady_clock::duration took,
                               bool ok) {
  if (!ok) {
    checkpoint_failures_.with({table}).add();
    return;
  }
  checkpoint_duration_.with({table}).observe(to_seconds(took));
  const std::lock_guard<std::mutex> lock(checkpoint_mutex_);
  last_checkpoint_[table] = epoch_seconds();
}

void ServerMetrics::resume(const std::string& table, bool rewound) {
  resumes_.with({table, rewound ? "rewound" : "kept"}).add();
}

std::vector<FamilyValue> ServerMetrics::collect() const { return registry_.collect(); }

std::vector<FamilyValue> ServerMetrics::collect_gauges() const {
  FamilyValue table_step{"gradwire_ps_table_step",
                         "Updates applied to each table shard so far (sync: steps; async: pushes).",
                         Type::kGauge,
                         {}};
  FamilyValue pending{"gradwire_ps_pending_bytes",
                      "Bytes of sync pushes a table shard holds for the step in progress.",
                      Type::kGauge,
                      {}};
  FamilyValue pending_limit{"gradwire_ps_pending_bytes_limit",
                            "The cap of gradwire_ps_pending_bytes (--max-pending-bytes).",
                            Type::kGauge,
                            {}};
  if (gauges_.tables) {
    for (const ServerGauges::Table& table : gauges_.tables()) {
      const metrics::Labels labels{{"table", table.name}};
      table_step.series.push_back(gauge_value(labels, static_cast<double>(table.step)));
      pending.series.push_back(gauge_value(labels, static_cast<double>(table.pending_bytes)));
      pending_limit.series.push_back(
          gauge_value(labels, static_cast<double>(table.max_pending_bytes)));
    }
  }
  const auto one = [](const char* name, const char* help, double value) {
    return FamilyValue{name, help, Type::kGauge, {gauge_value({}, value)}};
  };
  const auto read = [](const std::function<int64_t()>& get) {
    return get ? static_cast<double>(get()) : 0.0;
  };
  std::vector<FamilyValue> families{
      std::move(table_step),
      std::move(pending),
      std::move(pending_limit),
      one("gradwire_ps_total_pending_bytes", "Bytes of sync pushes all table shards hold.",
          read(gauges_.total_pending_bytes)),
      one("gradwire_ps_total_pending_bytes_limit",
          "The cap of gradwire_ps_total_pending_bytes (--max-total-pending-bytes).",
          static_cast<double>(gauges_.max_total_pending_bytes)),
      one("gradwire_ps_waiting_calls",
          "Calls waiting now: Step parts for other trainers, lookups for a dense table's values.",
          read(gauges_.waiting_calls)),
      one("gradwire_ps_waiting_calls_limit",
          "The cap of gradwire_ps_waiting_calls (--max-waiting-steps).",
          static_cast<double>(gauges_.max_waiting_calls)),
      one("gradwire_ps_channels", "Trainers' shared-memory call channels served now.",
          read(gauges_.channels)),
      one("gradwire_ps_restored_tables",
          "Table shards restored from checkpoint files when this server started.",
          static_cast<double>(gauges_.restored_tables)),
      one("gradwire_ps_start_time_seconds",
          "When this server started, in seconds since the epoch (a restart changes it).",
          start_time_)};
  FamilyValue ages{"gradwire_ps_checkpoint_age_seconds",
                   "Seconds since this server last wrote each table's checkpoint file.",
                   Type::kGauge,
                   {}};
  FamilyValue last{"gradwire_ps_checkpoint_last_success_timestamp_seconds",
                   "When this server last wrote each table's checkpoint file, in seconds since the "
                   "epoch.",
                   Type::kGauge,
                   {}};
  {
    const double now = epoch_seconds();
    const std::lock_guard<std::mutex> lock(checkpoint_mutex_);
    for (const auto& [table, at] : last_checkpoint_) {
      ages.series.push_back(gauge_value({{"table", table}}, now - at));
      last.series.push_back(gauge_value({{"table", table}}, at));
    }
  }
  families.push_back(std::move(ages));
  families.push_back(std::move(last));
  return families;
}

}  // namespace gradwire::ps
