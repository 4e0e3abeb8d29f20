// `gradwire-bench rpc`: the parameter servers' per-call floor. One gradwire parameter server
// (gradwire::ps::start_server) and one client (gradwire::ps::connect) in this process talk over
// loopback TCP; a bare gRPC echo (cases/rpc_echo.h) of the same bytes runs beside them. Each call
// kind (an empty round trip, a lookup, a push) is timed on both sides in alternating rounds, so
// that both see the same machine load (docs/benchmarks.md "gradwire-bench rpc").
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <functional>
#include <iostream>

#include "cases/rpc_echo.h"
#include "cases/rpc_report.h"
#include "cases/rpc_settings.h"
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

// One call kind on both sides.
struct CallPair {
  std::string call;
  std::function<void()> gradwire;
  std::function<void()> echo;
};

std::vector<RpcCallSamples> measure_rpc(const RpcSettings& settings) {
  ps::ServerOptions server_options;
  server_options.token = kToken;
  server_options.shared_memory = false;  // bytes on the socket: the gRPC path is what is measured
  const auto server = ps::start_server(server_options, EnvMap{});

  ps::ClientOptions client_options;
  client_options.servers = {server->address()};
  client_options.token = kToken;
  client_options.rank = 0;
  client_options.world_size = 1;
  client_options.shared_memory = false;
  const auto client = ps::connect(client_options, EnvMap{});
  // An async table applies each push when it arrives. Without staleness step() makes no call at
  // all; staleness 1 makes it one Step call per server that returns at once (the only trainer is
  // never behind): the empty round trip.
  ps::TableConfig table;
  table.name = kTable;
  table.num_rows = settings.ids * kIdStride;
  table.dim = settings.dim;
  table.mode = ps::UpdateMode::kAsync;
  table.staleness = 1;
  client->create_table(table);

  const at::Tensor ids = at::arange(0, table.num_rows, kIdStride, at::kLong);
  const at::Tensor grads = at::full({settings.ids, settings.dim}, 1e-3, at::kFloat);

  EchoServer echo_server;
  EchoClient echo(echo_server.address());
  auto echo_call = [&](const std::string& call) {
    const std::uint64_t out = rpc_request_bytes(call, settings);
    const std::uint64_t back = rpc_response_bytes(call, settings);
    return [&echo, out, back] { echo.call(out, back); };
  };

  const std::vector<CallPair> pairs = {
      {"empty", [&] { client->step(); }, echo_call("empty")},
      {"lookup", [&] { client->lookup(kTable, ids); }, echo_call("lookup")},
      {"push",
       [&] {
         client->push(kTable, ids, grads);
         client->flush();
       },
       echo_call("push")},
  };
  std::vector<RpcCallSamples> results;
  for (const auto& pair : pairs) {
    RpcCallSamples ours{pair.call,
                        kRpcGradwire,
                        rpc_request_bytes(pair.call, settings),
                        rpc_response_bytes(pair.call, settings),
                        {}};
    RpcCallSamples floor = ours;
    floor.system = kRpcEcho;
    const int rounds = std::min(kRounds, settings.iters);
    for (int round = 0; round < rounds; ++round) {
      const int timed = settings.iters / rounds + (round < settings.iters % rounds ? 1 : 0);
      const IterationCounts counts{round == 0 ? settings.warmup : 0, timed};
      for (const double s : time_iterations(counts, pair.gradwire)) {
        ours.microseconds.push_back(s * 1e6);
      }
      for (const double s : time_iterations(counts, pair.echo)) {
        floor.microseconds.push_back(s * 1e6);
      }
    }
    results.push_back(std::move(ours));
    results.push_back(std::move(floor));
  }
  server->shutdown();
  return results;
}

}  // namespace

Subcommand rpc_subcommand() {
  return case_subcommand<RpcSettings>(
      "rpc",
      "the parameter servers' per-call floor: an empty round trip, a lookup and a push on "
      "loopback, against a bare gRPC echo of the same bytes",
      rpc_options, [](CLI::App&, RankOptions&) {},
      [](const OptionTable<RpcSettings>& options, const RankOptions&,
         const std::vector<std::string>& argv) {
        const RpcSettings settings = options.resolve();
        prepare_output_files({settings.json_path, settings.html_path});
        at::set_num_threads(1);
        const std::vector<RpcCallSamples> calls = measure_rpc(settings);
        print_rpc_report(std::cout, settings, calls);
        const nlohmann::json document =
            rpc_document(conductor_metadata("grpc", 1, 1, argv), settings, calls);
        if (!settings.json_path.empty()) write_json_file(settings.json_path, document);
        if (!settings.html_path.empty()) write_html_report(settings.html_path, {document});
        return 0;
      });
}

}  // namespace gradwire::bench
