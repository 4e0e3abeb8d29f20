#include "comm/shm/attach.h"

#include <unistd.h>

#include <optional>
#include <random>

namespace gradwire::shm {

namespace {
const std::string kNameKey = "shm/name";
const std::string kAttachedKey = "shm/attached";
const std::string kUnlinkedKey = "shm/unlinked";

uint64_t random_nonce() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

void wait_key(c10d::Store& store, const std::string& key, std::chrono::milliseconds timeout,
              const char* waiting_for) {
  try {
    store.wait({key}, timeout);
  } catch (const std::exception& e) {
    std::string detail = e.what();
    throw std::runtime_error(std::string("shm: timed out after waiting for ") + waiting_for + " (" +
                             detail.substr(0, detail.find('\n')) + ")");
  }
}
}  // namespace

Segment join_segment(c10d::Store& store, int rank, const Layout& layout, int port,
                        std::chrono::milliseconds timeout) {
  std::string name;
  std::optional<Segment> segment;
  if (rank == 0) {
    name = segment_name(port, static_cast<int>(getpid()), random_nonce());
    segment.emplace(Segment::create(name, layout));
    store.set(kNameKey, std::vector<uint8_t>(name.begin(), name.end()));
  } else {
    wait_key(store, kNameKey, timeout, "rank 0 to create the shared-memory segment");
    auto bytes = store.get(kNameKey);
    name.assign(bytes.begin(), bytes.end());
    segment.emplace(Segment::attach(name, layout));
  }
  try {
    segment->control(rank).pid.store(getpid(), std::memory_order_release);
    if (store.add(kAttachedKey, 1) == layout.ranks) {
      unlink_segment(name);
      store.set(kUnlinkedKey, std::vector<uint8_t>{'1'});
    }
    wait_key(store, kUnlinkedKey, timeout, "every rank to attach the shared-memory segment");
  } catch (...) {
    unlink_segment(name);
    throw;
  }
  return std::move(*segment);
}

}  // namespace gradwire::shm
