#include "cases/rpc_report.h"

#include "gradwire/common/error.h"
#include "harness/stats.h"
#include "harness/table.h"

namespace gradwire::bench {

namespace {

const RpcCallSamples* find_call(const std::vector<RpcCallSamples>& calls, const std::string& call,
                                const std::string& system) {
  for (const auto& samples : calls) {
    if (samples.call == call && samples.system == system) return &samples;
  }
  return nullptr;
}

// p50 of `over` divided by p50 of `under`; nullopt when either is missing or empty, or the
// divisor is 0.
std::optional<double> p50_ratio(const RpcCallSamples* over, const RpcCallSamples* under) {
  if (over == nullptr || under == nullptr || over->microseconds.empty() ||
      under->microseconds.empty()) {
    return std::nullopt;
  }
  const double divisor = percentile(under->microseconds, 50);
  if (divisor <= 0) return std::nullopt;
  return percentile(over->microseconds, 50) / divisor;
}

}  // namespace

std::uint64_t rpc_request_bytes(const std::string& call, const RpcSettings& settings) {
  const auto ids = static_cast<std::uint64_t>(settings.ids) * 8;
  const auto tables = static_cast<std::uint64_t>(settings.tables);
  if (call == "empty") return 0;
  if (call == "lookup") return ids;
  if (call == "push" || call == "step" || call == "step-each") {
    return ids + rpc_response_bytes("lookup", settings);
  }
  if (call == "tables" || call == "tables-each") return tables * ids;
  throw InvalidArgument("unknown rpc call kind '" + call +
                        "': use empty, lookup, push, tables, tables-each, step or step-each");
}

std::uint64_t rpc_response_bytes(const std::string& call, const RpcSettings& settings) {
  const auto rows =
      static_cast<std::uint64_t>(settings.ids) * static_cast<std::uint64_t>(settings.dim) * 4;
  if (call == "lookup") return rows;
  if (call == "tables" || call == "tables-each") {
    return static_cast<std::uint64_t>(settings.tables) * rows;
  }
  rpc_request_bytes(call, settings);  // checks the name
  return 0;
}

std::optional<double> rpc_batched_ratio(const std::vector<RpcCallSamples>& calls,
                                        const RpcBatchedKind& kind, const std::string& system) {
  return p50_ratio(find_call(calls, kind.batched, system), find_call(calls, kind.each, system));
}

std::optional<double> rpc_p50_ratio(const std::vector<RpcCallSamples>& calls,
                                    const std::string& call, const std::string& system) {
  return p50_ratio(find_call(calls, call, system), find_call(calls, call, kRpcEcho));
}

void print_rpc_report(std::ostream& out, const RpcSettings& settings,
                      const std::vector<RpcCallSamples>& calls) {
  out << "# gradwire-bench rpc: one parameter server and one client in this process, on loopback "
         "TCP (gRPC: gradwire) and on the shared-memory call channel (shm), against a bare gRPC "
         "echo of the same bytes\n"
      << "# " << describe_rpc_settings(settings) << "\n";
  const Table table({{"call", 11, Align::kLeft},
                     {"system", 10, Align::kLeft},
                     {"request", 10},
                     {"response", 10},
                     {"calls", 7},
                     {"mean(us)", 10},
                     {"p50(us)", 10},
                     {"p99(us)", 10}});
  out << table.header() << "\n";
  for (const auto& samples : calls) {
    const Summary summary = summarize(samples.microseconds);
    out << table.row({samples.call, samples.system, format_bytes(samples.request_bytes),
                      format_bytes(samples.response_bytes), std::to_string(summary.count),
                      format_fixed(summary.mean, 1), format_fixed(summary.p50, 1),
                      format_fixed(summary.p99, 1)})
        << "\n";
  }
  for (const char* system : {kRpcGradwire, kRpcShm}) {
    std::string ratios;
    for (const char* call : kRpcCallKinds) {
      const auto ratio = rpc_p50_ratio(calls, call, system);
      if (!ratio) continue;
      ratios +=
          (ratios.empty() ? " " : ", ") + std::string(call) + " " + format_fixed(*ratio, 2) + "x";
    }
    if (!ratios.empty()) out << "# " << system << " / echo, p50:" << ratios << "\n";
  }
  for (const char* system : {kRpcGradwire, kRpcShm}) {
    std::string ratios;
    for (const RpcBatchedKind& kind : kRpcBatchedKinds) {
      const auto ratio = rpc_batched_ratio(calls, kind, system);
      if (!ratio) continue;
      ratios += (ratios.empty() ? " " : ", ") + std::string(kind.batched) + " " +
                format_fixed(*ratio, 2) + "x";
    }
    if (!ratios.empty()) {
      out << "# " << system << " batched / one call per part, p50:" << ratios << "\n";
    }
  }
}

RowSet rpc_rows(const std::vector<RpcCallSamples>& calls) {
  RowSet rows{{"call", "system"}, "us", "", "call", {}};
  for (const auto& samples : calls) {
    rows.rows.push_back(
        {{{"call", samples.call}, {"system", samples.system}}, samples.microseconds});
  }
  return rows;
}

nlohmann::json rpc_document(const RunMetadata& metadata, const RpcSettings& settings,
                            const std::vector<RpcCallSamples>& calls) {
  nlohmann::json document = make_document("rpc", metadata);
  document["settings"] = {
      {"preset", settings.preset}, {"ids", settings.ids},
      {"tables", settings.tables}, {"dim", settings.dim},
      {"iters", settings.iters},   {"warmup", settings.warmup},
      {"transport", "grpc"},       {"shm_transport", "shared-memory call channel"}};
  nlohmann::json list = nlohmann::json::array();
  for (const auto& samples : calls) {
    list.push_back({{"call", samples.call},
                    {"system", samples.system},
                    {"request_bytes", samples.request_bytes},
                    {"response_bytes", samples.response_bytes},
                    {"summary_us", to_json(summarize(samples.microseconds))}});
  }
  document["calls"] = list;
  nlohmann::json ratios = nlohmann::json::object();
  for (const char* call : kRpcCallKinds) {
    if (const auto ratio = rpc_p50_ratio(calls, call)) ratios[call] = *ratio;
  }
  document["p50_ratio"] = ratios;
  nlohmann::json shm = nlohmann::json::object();
  for (const char* call : kRpcCallKinds) {
    if (const auto ratio = rpc_p50_ratio(calls, call, kRpcShm)) shm[call] = *ratio;
  }
  if (!shm.empty()) document["p50_ratio_shm"] = shm;
  nlohmann::json batched = nlohmann::json::object();
  for (const char* system : {kRpcGradwire, kRpcShm}) {
    for (const RpcBatchedKind& kind : kRpcBatchedKinds) {
      if (const auto ratio = rpc_batched_ratio(calls, kind, system)) {
        batched[system][kind.batched] = *ratio;
      }
    }
  }
  if (!batched.empty()) document["p50_batched_ratio"] = batched;
  document["rows"] = to_json(rpc_rows(calls));
  return document;
}

}  // namespace gradwire::bench
