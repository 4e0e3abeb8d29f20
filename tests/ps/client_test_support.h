// Helpers for the client tests: S in-process servers and clients connected to them.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gradwire/ps/client.h"
#include "gradwire/ps/server.h"

namespace gradwire::ps::testing {

inline constexpr char kClientToken[] = "client-test-token";

// S servers on loopback ports picked at run time, stopped on destruction; `one_process`: started
// together (start_servers), sharing their call channels' threads.
class Servers {
 public:
  explicit Servers(int count, bool one_process = false);
  ~Servers();
  const std::vector<std::string>& addresses() const { return addresses_; }
  Server& server(int i) { return *servers_[i]; }

 private:
  std::vector<std::unique_ptr<Server>> servers_;
  std::vector<std::string> addresses_;
};

// The options of make_client, to change before connect().
ClientOptions client_options(const std::vector<std::string>& addresses, int rank = 0,
                             int trainers = 1,
                             std::chrono::milliseconds step_timeout = std::chrono::seconds(30),
                             std::chrono::milliseconds call_deadline = std::chrono::seconds(10));

// A client of `addresses` as trainer `rank` of `trainers`, with short deadlines.
std::shared_ptr<Client> make_client(
    const std::vector<std::string>& addresses, int rank = 0, int trainers = 1,
    std::chrono::milliseconds step_timeout = std::chrono::seconds(30),
    std::chrono::milliseconds call_deadline = std::chrono::seconds(10));

// How a test's trainers reach its in-process servers: the parameterised suites run on each.
enum class Transport {
  kShared,     // the default: shared memory, calls over the call channel
  kSharedOneProcess,  // as kShared, the servers started together (start_servers): one hub
  kBytes,      // ClientOptions::shared_memory = false: gRPC, tensors as bytes
  kOtherHost,  // the trainers' host identity differs from the servers': gRPC, bytes
};
const char* to_string(Transport transport);
// `options` set up for `transport`.
ClientOptions with_transport(ClientOptions options, Transport transport);
// What Client::transport(server) says for every server under `transport`.
std::string transport_name(Transport transport);
// Whether trainers share memory with their servers under `transport`.
bool shares_memory(Transport transport);
// Whether `transport` starts its servers together (Servers' one_process).
bool one_process(Transport transport);

// Runs fn(trainer) for trainers 0..count-1, each on its own thread, and joins them. Throws
// std::runtime_error naming every trainer whose fn threw, with its message.
void run_trainers(int count, const std::function<void(int trainer)>& fn);

// A rows x dim table named `name` with `mode`, seeded normal rows.
TableConfig small_table(const std::string& name, int64_t rows, int64_t dim, UpdateMode mode,
                        int trainers);

}  // namespace gradwire::ps::testing
