#include "comm/core/rendezvous.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "comm/core/c10d_adapter.h"
#include "comm/diagnostics/store_connection.h"
#include "gradwire/common/error.h"

namespace gradwire {

namespace {

// True once something accepts TCP connections at address:port (non-blocking connect, bounded by
// `limit`). Used to wait for rank 0's store quietly: c10d logs every failed attempt as an error.
bool accepts_connections(const std::string& address, int port, std::chrono::milliseconds limit) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) {
    return false;
  }
  bool ok = false;
  for (addrinfo* a = found; a != nullptr && !ok; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int error = 0;
      socklen_t len = sizeof(error);
      ok = poll(&p, 1, static_cast<int>(limit.count())) == 1 &&
           getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0;
    }
    close(fd);
  }
  freeaddrinfo(found);
  return ok;
}

std::string to_text(const std::vector<uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}
std::vector<uint8_t> to_bytes(const std::string& text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}
}  // namespace

c10::intrusive_ptr<c10d::Store> connect_store(const WorldInfo& world,
                                              std::chrono::milliseconds timeout) {
  if (!world.agent_store_prefix.empty() && !c10d_adapter::kStoreClientSpeaks2x) {
    throw ConfigError(
        "gradwire: torchrun's agent hosts the rendezvous store "
        "(TORCHELASTIC_USE_AGENT_STORE=True), "
        "and this gradwire's libtorch " +
        c10d_adapter::torch_version_string() +
        " cannot talk to a libtorch 2.x store: build gradwire against libtorch 2.x (README, "
        "\"Your own libtorch\"), or start the workers with gradwire-run");
  }
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(world.master_port);
  options.isServer = world.rank == 0 && world.agent_store_prefix.empty();
  options.numWorkers = c10::nullopt;  // gradwire's own join names absent ranks instead.
  options.waitWorkers = false;
  options.timeout = timeout;
  const std::string where = world.master_addr + ":" + std::to_string(world.master_port);
  const bool hosts = options.isServer;
  const auto start = std::chrono::steady_clock::now();
  // Rank 0 starting later than this rank is normal. libtorch 1.13 gives up at once when nobody
  // listens yet (logging an error), so wait quietly for a listener, then connect; retry until
  // the deadline. Past the deadline nothing more is tried: a connect attempt there would wait
  // up to another whole timeout (libtorch 2.x retries for all of options.timeout).
  std::string detail = "nothing accepted connections there";
  auto unreachable = [&](std::chrono::milliseconds waited) {
    return TimeoutError("gradwire: rank " + std::to_string(world.rank) +
                        " could not reach the rendezvous store at " + where +
                        (world.agent_store_prefix.empty() ? " (hosted by rank 0)"
                                                          : " (hosted by torchrun's agent)") +
                        " after " + format_duration(waited) + ": " + detail +
                        ". Is rank 0 running, and are MASTER_ADDR/MASTER_PORT the same on all "
                        "ranks?");
  };
  while (true) {
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    if (!hosts && elapsed >= timeout) throw unreachable(elapsed);
    if (!hosts &&
        !accepts_connections(world.master_addr, world.master_port,
                             std::min(timeout - elapsed, std::chrono::milliseconds(1000)))) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    try {
      c10::intrusive_ptr<c10d::Store> store = connect_tcp_store(world.master_addr, options);
      if (world.agent_store_prefix.empty()) return store;
      return c10::make_intrusive<c10d::PrefixStore>(world.agent_store_prefix, store);
    } catch (const std::exception& e) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
      detail = e.what();
      detail = detail.substr(0, detail.find('\n'));
      if (hosts) {
        throw ConfigError("gradwire: rank 0 could not host the rendezvous store on " + where +
                          ": " + detail +
                          ". Pick another MASTER_PORT (gradwire-run picks a free one).");
      }
      if (waited >= timeout) throw unreachable(waited);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

std::vector<PeerInfo> join_members(c10d::Store& store, const std::string& prefix, int index,
                                   int size, std::chrono::milliseconds timeout,
                                   const std::vector<int>& member_world_ranks) {
  auto key = [&](int i) { return prefix + "/join/" + std::to_string(i); };
  store.set(key(index), to_bytes(encode_peer(self_peer())));
  std::vector<std::string> keys;
  for (int i = 0; i < size; ++i) keys.push_back(key(i));

  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  // Poll so the error can list exactly who is missing (store.wait() only says "timeout").
  std::vector<int> missing;
  auto poll = std::chrono::milliseconds(5);
  while (true) {
    missing.clear();
    try {
      for (int i = 0; i < size; ++i) {
        if (!store.check({keys[i]})) missing.push_back(i);
      }
    } catch (const std::exception& e) {
      std::string detail = e.what();
      throw PeerLostError(
          "gradwire: rendezvous '" + prefix + "' lost the store hosted by rank 0 (" +
              detail.substr(0, detail.find('\n')) + "). Rank 0 exited or failed; check its output.",
          {0});
    }
    if (missing.empty()) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string names;
      for (int i : missing) {
        names += (names.empty() ? "" : ", ") + std::to_string(member_world_ranks.at(i));
      }
      throw TimeoutError("gradwire: rendezvous '" + prefix + "' timed out after " +
                         format_duration(timeout) + ": rank(s) " + names + " of " +
                         std::to_string(size) +
                         " never joined. Check that they started and use the same MASTER_ADDR, "
                         "MASTER_PORT and WORLD_SIZE; raise " +
                         std::string(prefix == "gradwire/peers" ? "GRADWIRE_RENDEZVOUS_TIMEOUT"
                                                                : "GRADWIRE_TIMEOUT") +
                         " if they start slowly.");
    }
    std::this_thread::sleep_for(poll);
    poll = std::min(poll * 2, std::chrono::milliseconds(100));
  }
  std::vector<PeerInfo> peers;
  peers.reserve(size);
  for (int i = 0; i < size; ++i) peers.push_back(decode_peer(to_text(store.get(keys[i]))));
  return peers;
}

}  // namespace gradwire
