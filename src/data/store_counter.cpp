// The dynamic chunk queue's counter in the job's c10d TCPStore or in an elastic job's JobStore.
#include "gradwire/data/store_counter.h"

#include <mutex>
#include <thread>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "gradwire/comm/job_store.h"
#include "gradwire/comm/world.h"
#include "gradwire/common/error.h"
#include "gradwire/data/shared_counter.h"

namespace gradwire::data {

namespace {
class StoreCounter : public SharedCounter {
 public:
  StoreCounter(c10::intrusive_ptr<c10d::Store> store, std::string address)
      : store_(std::move(store)), address_(std::move(address)) {}

  int64_t add(const std::string& key, int64_t delta) override {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      return store_->add(key, delta);
    } catch (const std::exception& e) {
      const std::string what = e.what();
      const std::string first_line = what.substr(0, what.find('\n'));
      throw BackendError("gradwire: adding to counter '" + key + "' in the job's store at " +
                         address_ + " failed. Backend said: " + first_line +
                         ". Check that rank 0 (which hosts the store) is still running.");
    }
  }

 private:
  std::mutex mutex_;  // one request at a time on the connection
  c10::intrusive_ptr<c10d::Store> store_;
  std::string address_;
};

class JobStoreCounter : public SharedCounter {
 public:
  explicit JobStoreCounter(std::shared_ptr<JobStore> store) : store_(std::move(store)) {}

  int64_t add(const std::string& key, int64_t delta) override {
    try {
      return store_->add(key, delta);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      const std::string what = e.what();
      throw BackendError(
          "gradwire: adding to counter '" + key +
          "' in the job store failed. Backend said: " + what.substr(0, what.find('\n')) +
          ". Check that the launcher hosting the store (gradwire-run --elastic on "
          "node 0) is still running.");
    }
  }

 private:
  std::shared_ptr<JobStore> store_;
};
}  // namespace

std::shared_ptr<SharedCounter> job_store_counter(std::shared_ptr<JobStore> store) {
  if (!store) throw InvalidArgument("gradwire: job_store_counter needs a store");
  return std::make_shared<JobStoreCounter>(std::move(store));
}

std::shared_ptr<SharedCounter> connect_job_store_counter(std::chrono::milliseconds timeout,
                                                         const EnvMap& env) {
  const std::optional<std::string> address = env.get("MASTER_ADDR");
  const std::optional<long> port = env.get_int("MASTER_PORT");
  if (!address || !port) {
    throw ConfigError(
        "gradwire: connect_job_store_counter needs MASTER_ADDR and MASTER_PORT naming the job "
        "store; start the workers with gradwire-run --elastic (or pass a JobStore to "
        "job_store_counter)");
  }
  return job_store_counter(JobStore::connect(*address, static_cast<int>(*port), timeout));
}

std::shared_ptr<SharedCounter> connect_store_counter(const WorldInfo& world,
                                                     std::chrono::milliseconds timeout) {
  // A world of one rendezvouses in process and hosts no store (master_port 0); its only rank
  // needs no one to share the counter with.
  if (world.world_size == 1) return make_local_counter();
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(world.master_port);
  options.isServer = false;
  options.numWorkers = c10::nullopt;
  options.waitWorkers = false;
  options.timeout = timeout;
  const std::string address = world.master_addr + ":" + std::to_string(world.master_port);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    try {
      return std::make_shared<StoreCounter>(
          c10::make_intrusive<c10d::TCPStore>(world.master_addr, options), address);
    } catch (const std::exception& e) {
      if (std::chrono::steady_clock::now() >= deadline) {
        const std::string what = e.what();
        throw TimeoutError(
            "gradwire: could not connect to the job's store at " + address + " within " +
            format_duration(timeout) +
            " for the dynamic chunk queue. Backend said: " + what.substr(0, what.find('\n')) +
            ". Create the World first and keep it alive while reading.");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

}  // namespace gradwire::data
