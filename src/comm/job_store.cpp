#include "gradwire/comm/job_store.h"

#include <chrono>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "comm/core/rendezvous.h"
#include "comm/diagnostics/backend_text.h"
#include "comm/job_store_impl.h"
#include "gradwire/common/error.h"

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
  impl->where = address + ":" + std::to_string(impl->port);
  return std::make_unique<JobStore>(std::move(impl));
}

// Runs `op` (`what` on `key`) on the store, one call at a time; a failure of the store or of the
// link to it becomes gradwire's error naming the store, the operation and the time waited
// (TimeoutError, PeerLostError, BackendError: docs/errors.md), not c10's bare "Socket Timeout".
template <typename Op>
auto on_store(JobStore::Impl& impl, const char* what, const std::string& key, Op&& op)
    -> decltype(op()) {
  const auto start = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(impl.mutex);
  try {
    return op();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    const auto limit =
        std::chrono::duration_cast<std::chrono::milliseconds>(impl.store->getTimeout());
    const std::string said = first_line(e.what());
    const std::string head = std::string("gradwire: the job store at ") + impl.where + ": " + what +
                             " '" + key + "' failed after " + format_duration(waited);
    const std::string advice =
        ". Check that the store's host (the launcher that hosts it) is running and reachable "
        "from this host.";
    if (looks_like_timeout(said)) {
      throw TimeoutError(head + ": timed out (limit " + format_duration(limit) +
                         "): the store or the link to it stopped answering. Backend said: " + said +
                         advice);
    }
    if (looks_like_peer_loss(said)) {
      throw PeerLostError(
          head + ": the store closed the connection. Backend said: " + said + advice, {});
    }
    throw BackendError(head + ": " + said + advice);
  }
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
  on_store(*impl_, "set", key, [&] { impl_->store->set(key, bytes_of(value)); });
}

std::optional<std::string> JobStore::get(const std::string& key) {
  return on_store(*impl_, "get", key, [&]() -> std::optional<std::string> {
    if (!impl_->store->check({key})) return std::nullopt;
    return text_of(impl_->store->get(key));
  });
}

int64_t JobStore::add(const std::string& key, int64_t delta) {
  return on_store(*impl_, "add", key, [&] { return impl_->store->add(key, delta); });
}

std::string JobStore::compare_set(const std::string& key, const std::string& expected,
                                  const std::string& desired) {
  return on_store(*impl_, "compare_set", key, [&] {
    return text_of(impl_->store->compareSet(key, bytes_of(expected), bytes_of(desired)));
  });
}

}  // namespace gradwire
