// How a run's parameter-server calls travelled, as the run itself saw it: ps::Client::transport
// per server ("shared memory": the call channel of docs/ps.md "Shared-memory calls"; "grpc"),
// read from the client after training, never assumed from the settings. The ps and hybrid
// headers, metadata and JSON say what these report (docs/benchmarks.md). Pure but for
// client_transports, which asks a client.
#pragma once

#include <string>
#include <vector>

namespace gradwire::bench {

// What a document's summary fields hold when the servers did not all travel one way.
inline constexpr const char* kMixedTransports = "mixed";

// Per server, how `client`'s calls reach it now (any type with num_servers() and
// transport(server), as gradwire::ps::Client has; a template so that this header needs no ps).
template <class Client>
std::vector<std::string> client_transports(const Client& client) {
  std::vector<std::string> transports;
  for (int server = 0; server < client.num_servers(); ++server) {
    transports.push_back(client.transport(server));
  }
  return transports;
}

// One value for a run's lists (one list per trainer job, i.e. per repeat, each per server): the
// transport when every server of every list used the same one, kMixedTransports when they
// differ; "none" when there is no server at all.
std::string summarize_transports(const std::vector<std::vector<std::string>>& lists);
// Likewise for one value per repeat (a communicator's backend()): the value, or kMixedTransports.
std::string summarize_values(const std::vector<std::string>& values);

// A line's words for one list: "shared memory to 8 of 8 servers", "shared memory to 1 of 2
// servers, grpc to 1 of 2 servers" (in the order the servers first use them), "no servers".
std::string describe_transports(const std::vector<std::string>& servers);

}  // namespace gradwire::bench
