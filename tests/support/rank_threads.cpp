#include "rank_threads.h"

#include <exception>
#include <mutex>
#include <thread>

#include "gradwire/launch/launcher.h"

namespace gradwire::testing {

int free_port() { return launch::pick_free_port("127.0.0.1"); }

InitOptions loopback_options(int rank, int world_size, int port,
                             std::chrono::milliseconds timeout) {
  InitOptions options;
  options.rank = rank;
  options.world_size = world_size;
  options.local_rank = rank;
  options.local_world_size = world_size;
  options.master_addr = "127.0.0.1";
  options.master_port = port;
  options.backend = "gloo";
  options.timeout = timeout;
  options.rendezvous_timeout = timeout;  // the rendezvous tests time it out on purpose
  options.gloo_threads = 1;
  return options;
}

void run_threads(int count, const std::function<void(int)>& fn) {
  std::mutex mutex;
  std::exception_ptr first_error;
  std::vector<std::thread> threads;
  for (int index = 0; index < count; ++index) {
    threads.emplace_back([&, index] {
      try {
        fn(index);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!first_error) first_error = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

void run_ranks(int world_size, const std::function<void(int, World&)>& fn,
               std::chrono::milliseconds timeout, std::vector<int> present,
               const std::string& backend) {
  if (present.empty()) {
    for (int r = 0; r < world_size; ++r) present.push_back(r);
  }
  const int port = free_port();
  run_threads(static_cast<int>(present.size()), [&](int index) {
    const int rank = present[index];
    InitOptions options = loopback_options(rank, world_size, port, timeout);
    options.backend = backend;
    auto world = init(options);
    fn(rank, *world);
  });
}

}  // namespace gradwire::testing
