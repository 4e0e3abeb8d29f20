// `gradwire-bench rpc`'s results: the calls measured on each side (gradwire's parameter server over
// gRPC and over its shared-memory call channel, the bare gRPC echo), their table, the gradwire /
// echo ratios, the rows diff and report read, and the JSON document (pure, unit-tested).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cases/rpc_settings.h"
#include "harness/report.h"
#include "harness/rows.h"

namespace gradwire::bench {

// The call kinds, in the order they are measured and printed.
inline constexpr const char* kRpcCallKinds[] = {"empty",       "lookup", "push",     "tables",
                                                "tables-each", "step",   "step-each"};
// The batched kinds (docs/ps.md "Batched calls") and the kind doing the same work with one call
// per part: a lookup of several tables in one call per server against one call per table (all in
// flight at once); a push and a sync step in one call (deferred push) against the push, then the
// step.
struct RpcBatchedKind {
  const char* batched;
  const char* each;
};
inline constexpr RpcBatchedKind kRpcBatchedKinds[] = {{"tables", "tables-each"},
                                                      {"step", "step-each"}};
// The sides: gradwire over gRPC, gradwire over the call channel (docs/ps.md "Shared-memory
// calls"), the echo.
inline constexpr const char* kRpcGradwire = "gradwire";
inline constexpr const char* kRpcShm = "shm";
inline constexpr const char* kRpcEcho = "echo";

// One call kind on one side: the bytes each call carries and the time of each timed call.
struct RpcCallSamples {
  std::string call;                  // "empty", "lookup", "push"
  std::string system;                // kRpcGradwire, kRpcShm or kRpcEcho
  std::uint64_t request_bytes = 0;   // payload out (ids, gradient rows)
  std::uint64_t response_bytes = 0;  // payload back (rows)
  std::vector<double> microseconds;  // per call, in measured order
};

// Pure: the payload of each call kind for `settings` (the echo carries exactly these): empty
// 0 / 0, lookup ids x 8 out and ids x dim x 4 back, push both out and nothing back; tables and
// tables-each a lookup's times `tables`, step and step-each a push's.
std::uint64_t rpc_request_bytes(const std::string& call, const RpcSettings& settings);
std::uint64_t rpc_response_bytes(const std::string& call, const RpcSettings& settings);

// Pure: p50 of `system`'s `call` over p50 of the echo's; nullopt when a side is missing or the
// echo's p50 is 0.
std::optional<double> rpc_p50_ratio(const std::vector<RpcCallSamples>& calls,
                                    const std::string& call,
                                    const std::string& system = kRpcGradwire);

// Pure: p50 of `system`'s batched kind over p50 of its one-call-per-part kind; nullopt when either
// is missing.
std::optional<double> rpc_batched_ratio(const std::vector<RpcCallSamples>& calls,
                                        const RpcBatchedKind& kind, const std::string& system);

// Prints the table (one line per call kind and side: bytes, mean, p50, p99 in us) and the ratio
// lines "# gradwire / echo, p50: empty 2.10x, lookup 1.85x, push 2.40x" and, when measured,
// "# shm / echo, p50: ..."; when the batched kinds were measured, for each side "# gradwire
// batched / one call per part, p50: tables 0.40x, step 0.55x".
void print_rpc_report(std::ostream& out, const RpcSettings& settings,
                      const std::vector<RpcCallSamples>& calls);

// The rows: dimensions call and system, in us, a chart per call.
RowSet rpc_rows(const std::vector<RpcCallSamples>& calls);

// {"schema_version", "benchmark": "rpc", "metadata", "settings", "calls": [{call, system,
// request_bytes, response_bytes, summary (us)}], "p50_ratio": {call: ratio} (gradwire over gRPC),
// "p50_ratio_shm": {call: ratio} (when measured), "p50_batched_ratio": {system: {batched kind:
// ratio}} (when measured), "rows"}.
nlohmann::json rpc_document(const RunMetadata& metadata, const RpcSettings& settings,
                            const std::vector<RpcCallSamples>& calls);

}  // namespace gradwire::bench
