// `gradwire-bench rpc`: the parameter servers' per-call floor. One gradwire parameter server
// (gradwire::ps::start_server) and one client (gradwire::ps::connect) in this process talk over
// loopback TCP, a second pair over the shared-memory call channel (docs/ps.md "Shared-memory
// calls"); a bare gRPC echo (cases/rpc_echo.h) of the same bytes runs beside them. Each call kind
// (an empty round trip, a lookup, a push, and the batched calls against one call per part: a
// lookup of several tables, a push with a sync step) is timed on every side in alternating
// rounds, so that all see the same machine load (docs/benchmarks.md "gradwire-bench rpc").
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <functional>
#include <iostream>

#include "cases/rpc_echo.h"
#include "cases/rpc_report.h"
#include "cases/rpc_settings.h"
#include "gradwire/common/error.h"
#include "gradwire/ps/client.h"
#include "gradwire/ps/server.h"
#include "harness/case.h"
#include "harness/ranks.h"
#include "harness/report.h"
#include "harness/timing.h"
#include "report/html_report.h"
#include "subcommand.h"

namespace gradwire::bench {

namespace {

constexpr const char* kTable = "rpc";
constexpr const char* kToken = "gradwire-bench-rpc";
// Timed calls alternate between the sides in this many rounds (fewer when there are fewer calls).
constexpr int kRounds = 5;
// Ids are spread over the table this far apart.
constexpr std::int64_t kIdStride = 131;

// One call kind on every side.
struct CallSides {
  std::string call;
  std::function<void()> gradwire;
  std::function<void()> shm;
  std::function<void()> echo;
};

constexpr const char* kSyncEach = "rpc_sync_each";
constexpr const char* kSyncDeferred = "rpc_sync_deferred";

std::string table_name(int t) { return std::string(kTable) + "_" + std::to_string(t); }

// A server and its clients in this process; `shared_memory`: the calls go over the call channel
// (checked, and `transport` says what the clients reported), else bytes over loopback TCP. `client`
// calls the async tables; `each` and `deferred` a sync table each, pushing at once and deferring
// the pushes (ClientOptions::defer_pushes).
struct ServerAndClient {
  std::unique_ptr<ps::Server> server;
  std::shared_ptr<ps::Client> client;
  std::shared_ptr<ps::Client> each;
  std::shared_ptr<ps::Client> deferred;
  std::string transport;  // ps::Client::transport(0) of all three
};

// `table`: the async table of staleness 1; `tables` more without staleness, and the two sync
// tables, of its size.
ServerAndClient start_pair(const ps::TableConfig& table, int tables, bool shared_memory) {
  ps::ServerOptions server_options;
  server_options.token = kToken;
  server_options.shared_memory = shared_memory;
  ServerAndClient pair;
  pair.server = ps::start_server(server_options, EnvMap{});
  ps::ClientOptions client_options;
  client_options.servers = {pair.server->address()};
  client_options.token = kToken;
  client_options.rank = 0;
  client_options.world_size = 1;
  client_options.shared_memory = shared_memory;
  pair.client = ps::connect(client_options, EnvMap{});
  pair.each = ps::connect(client_options, EnvMap{});
  client_options.defer_pushes = true;
  pair.deferred = ps::connect(client_options, EnvMap{});
  pair.client->create_table(table);
  ps::TableConfig other = table;
  other.staleness = 0;
  for (int t = 0; t < tables; ++t) {
    other.name = table_name(t);
    pair.client->create_table(other);
  }
  other.mode = ps::UpdateMode::kSync;
  other.num_trainers = 1;
  other.name = kSyncEach;
  pair.each->create_table(other);
  other.name = kSyncDeferred;
  pair.deferred->create_table(other);
  const std::string expected = shared_memory ? "shared memory" : "grpc";
  for (const auto& client : {pair.client, pair.each, pair.deferred}) {
    if (client->transport(0) != expected) {
      throw BackendError("gradwire-bench rpc: the calls go over " + client->transport(0) +
                         ", not " + expected);
    }
  }
  pair.transport = pair.client->transport(0);
  return pair;
}

// `transports` gets the two pairs' transports as their clients reported them.
std::vector<RpcCallSamples> measure_rpc(const RpcSettings& settings,
                                        std::vector<std::string>& transports) {
  // An async table applies each push when it arrives. Without staleness step() makes no call at
  // all; staleness 1 makes it one Step call per server that returns at once (the only trainer is
  // never behind): the empty round trip.
  ps::TableConfig table;
  table.name = kTable;
  table.num_rows = settings.ids * kIdStride;
  table.dim = settings.dim;
  table.mode = ps::UpdateMode::kAsync;
  table.staleness = 1;
  const ServerAndClient grpc = start_pair(table, settings.tables, false);
  const ServerAndClient shm = start_pair(table, settings.tables, true);
  transports = {grpc.transport, shm.transport};

  const at::Tensor ids = at::arange(0, table.num_rows, kIdStride, at::kLong);
  const at::Tensor grads = at::full({settings.ids, settings.dim}, 1e-3, at::kFloat);

  EchoServer echo_server;
  EchoClient echo(echo_server.address());
  auto echo_call = [&](const std::string& call) {
    const std::uint64_t out = rpc_request_bytes(call, settings);
    const std::uint64_t back = rpc_response_bytes(call, settings);
    return [&echo, out, back] { echo.call(out, back); };
  };

  const auto step = [](const std::shared_ptr<ps::Client>& client) {
    return [client] { client->step(); };
  };
  const auto lookup = [&](const std::shared_ptr<ps::Client>& client) {
    return [client, &ids] { client->lookup(kTable, ids); };
  };
  const auto push = [&](const std::shared_ptr<ps::Client>& client) {
    return [client, &ids, &grads] {
      client->push(kTable, ids, grads);
      client->flush();
    };
  };
  std::vector<ps::TableIds> several;
  for (int t = 0; t < settings.tables; ++t) several.push_back({table_name(t), ids});
  const auto tables = [&](const std::shared_ptr<ps::Client>& client) {
    return [client, &several] { client->lookup_many(several); };
  };
  const auto tables_each = [&](const std::shared_ptr<ps::Client>& client) {
    return [client, &several] {
      std::vector<std::unique_ptr<ps::PendingLookup>> pending;
      for (const ps::TableIds& lookup : several) {
        pending.push_back(client->start_lookup(lookup.table, lookup.ids));
      }
      for (auto& lookup : pending) lookup->wait();
    };
  };
  const auto push_step = [&](const std::shared_ptr<ps::Client>& client, const char* name) {
    return [client, name, &ids, &grads] {
      client->push(name, ids, grads);
      client->step();
    };
  };
  const std::vector<CallSides> kinds = {
      {"empty", step(grpc.client), step(shm.client), echo_call("empty")},
      {"lookup", lookup(grpc.client), lookup(shm.client), echo_call("lookup")},
      {"push", push(grpc.client), push(shm.client), echo_call("push")},
      {"tables", tables(grpc.client), tables(shm.client), echo_call("tables")},
      {"tables-each", tables_each(grpc.client), tables_each(shm.client), echo_call("tables-each")},
      {"step", push_step(grpc.deferred, kSyncDeferred), push_step(shm.deferred, kSyncDeferred),
       echo_call("step")},
      {"step-each", push_step(grpc.each, kSyncEach), push_step(shm.each, kSyncEach),
       echo_call("step-each")},
  };
  std::vector<RpcCallSamples> results;
  for (const auto& kind : kinds) {
    RpcCallSamples ours{kind.call,
                        kRpcGradwire,
                        rpc_request_bytes(kind.call, settings),
                        rpc_response_bytes(kind.call, settings),
                        {}};
    RpcCallSamples channel = ours;
    channel.system = kRpcShm;
    RpcCallSamples floor = ours;
    floor.system = kRpcEcho;
    const int rounds = std::min(kRounds, settings.iters);
    for (int round = 0; round < rounds; ++round) {
      const int timed = settings.iters / rounds + (round < settings.iters % rounds ? 1 : 0);
      const IterationCounts counts{round == 0 ? settings.warmup : 0, timed};
      for (auto [side, samples] : {std::pair{&kind.gradwire, &ours}, std::pair{&kind.shm, &channel},
                                   std::pair{&kind.echo, &floor}}) {
        for (const double s : time_iterations(counts, *side)) {
          samples->microseconds.push_back(s * 1e6);
        }
      }
    }
    results.push_back(std::move(ours));
    results.push_back(std::move(channel));
    results.push_back(std::move(floor));
  }
  grpc.server->shutdown();
  shm.server->shutdown();
  return results;
}

}  // namespace

Subcommand rpc_subcommand() {
  return case_subcommand<RpcSettings>(
      "rpc",
      "the parameter servers' per-call floor: an empty round trip, a lookup, a push and the "
      "batched calls on loopback and over shared memory, against a bare gRPC echo of the same "
      "bytes",
      rpc_options, [](CLI::App&, RankOptions&) {},
      [](const OptionTable<RpcSettings>& options, const RankOptions&,
         const std::vector<std::string>& argv) {
        const RpcSettings settings = options.resolve();
        prepare_output_files({settings.json_path, settings.html_path});
        at::set_num_threads(1);
        std::vector<std::string> transports;
        const std::vector<RpcCallSamples> calls = measure_rpc(settings, transports);
        print_rpc_report(std::cout, settings, calls);
        // Both pairs' transports as their clients reported them: "grpc,shared memory".
        std::string backend;
        for (const auto& transport : transports)
          backend += (backend.empty() ? "" : ",") + transport;
        const nlohmann::json document =
            rpc_document(conductor_metadata(backend, 1, 1, argv), settings, calls);
        if (!settings.json_path.empty()) write_json_file(settings.json_path, document);
        if (!settings.html_path.empty()) write_html_report(settings.html_path, {document});
        return 0;
      });
}

}  // namespace gradwire::bench
