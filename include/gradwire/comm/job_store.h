// The job's key-value store as a launcher or an elastic job sees it: the c10d TCPStore that
// outlives the workers (gradwire-run hosts it in elastic mode, docs/elastic.md), or one in this
// process for tests. Keys and values are strings; nothing here waits except connecting.
//
// Errors: a store that stops answering within its timeout (the link to its host cut, its host
// stopped) is a TimeoutError, a closed connection a PeerLostError, any other failure a
// BackendError; each names the store's address, the operation and key, and the time waited.
//
// Thread safety: one JobStore may be used from several threads (calls are serialised).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace gradwire {

class JobStore {
 public:
  // Hosts a store on address:port (port 0 picks a free one; port() says which). ConfigError when
  // nothing can listen there.
  static std::unique_ptr<JobStore> host(const std::string& address, int port,
                                        std::chrono::milliseconds timeout);
  // Connects to a store hosted elsewhere; TimeoutError naming address:port when nothing accepts
  // connections within `timeout`.
  static std::unique_ptr<JobStore> connect(const std::string& address, int port,
                                           std::chrono::milliseconds timeout);
  // A store inside this process (HashStore): every JobStore::in_process() is its own store;
  // share one through shared().
  static std::unique_ptr<JobStore> in_process(std::chrono::milliseconds timeout);

  ~JobStore();
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  // Another handle on the same store (same connection).
  std::unique_ptr<JobStore> shared() const;

  int port() const;  // 0 for an in-process store
  void set(const std::string& key, const std::string& value);
  // The value, or nullopt when the key is absent.
  std::optional<std::string> get(const std::string& key);
  // Adds `delta` to the integer at `key` (absent: 0) and returns the sum.
  int64_t add(const std::string& key, int64_t delta);
  // Sets `key` to `desired` when it is absent and `expected` is empty, or when it holds
  // `expected`; returns the value it holds afterwards.
  std::string compare_set(const std::string& key, const std::string& expected,
                          const std::string& desired);

  struct Impl;
  explicit JobStore(std::shared_ptr<Impl> impl);
  Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace gradwire
