#include "client_test_support.h"

#include <stdexcept>
#include <thread>

namespace gradwire::ps::testing {

Servers::Servers(int count, bool one_process) {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.token = kClientToken;
  if (one_process) {
    servers_ = start_servers(std::vector<ServerOptions>(count, options));
  } else {
    for (int i = 0; i < count; ++i) servers_.push_back(start_server(options));
  }
  for (const auto& server : servers_) addresses_.push_back(server->address());
}

Servers::~Servers() {
  for (auto& server : servers_) server->shutdown(std::chrono::milliseconds(500));
}

ClientOptions client_options(const std::vector<std::string>& addresses, int rank, int trainers,
                             std::chrono::milliseconds step_timeout,
                             std::chrono::milliseconds call_deadline) {
  ClientOptions options;
  options.servers = addresses;
  options.token = kClientToken;
  options.rank = rank;
  options.world_size = trainers;
  options.step_timeout = step_timeout;
  options.call_deadline = call_deadline;
  return options;
}

std::shared_ptr<Client> make_client(const std::vector<std::string>& addresses, int rank,
                                    int trainers, std::chrono::milliseconds step_timeout,
                                    std::chrono::milliseconds call_deadline) {
  return connect(client_options(addresses, rank, trainers, step_timeout, call_deadline));
}

void run_trainers(int count, const std::function<void(int trainer)>& fn) {
  std::vector<std::string> errors(count);
  std::vector<std::thread> threads;
  for (int t = 0; t < count; ++t) {
    threads.emplace_back([&, t] {
      try {
        fn(t);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::string failures;
  for (int t = 0; t < count; ++t) {
    if (!errors[t].empty()) failures += "trainer " + std::to_string(t) + ": " + errors[t] + "\n";
  }
  if (!failures.empty()) throw std::runtime_error(failures);
}

TableConfig small_table(const std::string& name, int64_t rows, int64_t dim, UpdateMode mode,
                        int trainers) {
  TableConfig config;
  config.name = name;
  config.num_rows = rows;
  config.dim = dim;
  config.mode = mode;
  config.num_trainers = trainers;
  config.initializer.seed = 3;
  config.optimizer.lr = 0.1;
  return config;
}

const char* to_string(Transport transport) {
  switch (transport) {
    case Transport::kShared:
      return "shared";
    case Transport::kSharedOneProcess:
      return "shared_one_process";
    case Transport::kBytes:
      return "bytes";
    case Transport::kOtherHost:
      return "otherhost";
  }
  return "?";
}

ClientOptions with_transport(ClientOptions options, Transport transport) {
  options.shared_memory = transport != Transport::kBytes;
  if (transport == Transport::kOtherHost) options.host_identity = "another-host";
  return options;
}

std::string transport_name(Transport transport) {
  return shares_memory(transport) ? "shared memory" : "grpc";
}

bool shares_memory(Transport transport) {
  return transport == Transport::kShared || transport == Transport::kSharedOneProcess;
}

bool one_process(Transport transport) { return transport == Transport::kSharedOneProcess; }

}  // namespace gradwire::ps::testing
