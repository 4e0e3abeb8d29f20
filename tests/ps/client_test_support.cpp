#include "client_test_support.h"

namespace gradwire::ps::testing {

Servers::Servers(int count) {
  for (int i = 0; i < count; ++i) {
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.token = kClientToken;
    servers_.push_back(start_server(options));
    addresses_.push_back(servers_.back()->address());
  }
}

Servers::~Servers() {
  for (auto& server : servers_) server->shutdown(std::chrono::milliseconds(500));
}

std::shared_ptr<Client> make_client(const std::vector<std::string>& addresses, int rank,
                                    int trainers, std::chrono::milliseconds step_timeout,
                                    std::chrono::milliseconds call_deadline) {
  ClientOptions options;
  options.servers = addresses;
  options.token = kClientToken;
  options.trainer_rank = rank;
  options.num_trainers = trainers;
  options.step_timeout = step_timeout;
  options.call_deadline = call_deadline;
  return connect(options);
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

}  // namespace gradwire::ps::testing
