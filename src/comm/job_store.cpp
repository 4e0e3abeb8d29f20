#include "gradwire/comm/job_store.h"

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "comm/core/rendezvous.h"
#include "comm/job_store_impl.h"

namespace gradwire {
namespace {

std::vector<uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }
std::string text_of(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

std::unique_ptr<JobStore> over_tcp(const std::string& address, int port, bool hosts,
                                   std::chrono::milliseconds timeout) {
  WorldInfo where;
  where.rank = hosts ? 0 : 1;
  where.world_size = 2;
  where.master_addr = address;
  where.master_port = port;
  auto impl = std::make_shared<JobStore::Impl>();
  impl->store = connect_store(where, timeout);
  const auto* tcp = dynamic_cast<const c10d::TCPStore*>(impl->store.get());
  impl->port = tcp != nullptr ? tcp->getPort() : port;
  return std::make_unique<JobStore>(std::move(impl));
}

}  // namespace

JobStore::JobStore(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
JobStore::~JobStore() = default;

std::unique_ptr<JobStore> JobStore::host(const std::string& address, int port,
                                         std::chrono::milliseconds timeout) {
  return over_tcp(address, port, true, timeout);
}

std::unique_ptr<JobStore> JobStore::connect(const std::string& address, int port,
                                            std::chrono::milliseconds timeout) {
  return over_tcp(address, port, false, timeout);
}

std::unique_ptr<JobStore> JobStore::in_process(std::chrono::milliseconds timeout) {
  auto impl = std::make_shared<Impl>();
  impl->store = c10::make_intrusive<c10d::HashStore>();
  impl->store->setTimeout(timeout);
  return std::make_unique<JobStore>(std::move(impl));
}

std::unique_ptr<JobStore> JobStore::shared() const { return std::make_unique<JobStore>(impl_); }

int JobStore::port() const { return impl_->port; }

void JobStore::set(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->store->set(key, bytes_of(value));
}

std::optional<std::string> JobStore::get(const std::string& key) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (!impl_->store->check({key})) return std::nullopt;
  return text_of(impl_->store->get(key));
}

int64_t JobStore::add(const std::string& key, int64_t delta) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->store->add(key, delta);
}

std::string JobStore::compare_set(const std::string& key, const std::string& expected,
                                  const std::string& desired) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return text_of(impl_->store->compareSet(key, bytes_of(expected), bytes_of(desired)));
}

}  // namespace gradwire
