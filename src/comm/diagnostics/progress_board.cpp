#include "comm/diagnostics/progress_board.h"

#include <algorithm>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "comm/diagnostics/store_connection.h"

#include "comm/diagnostics/backend_text.h"
#include "gradwire/common/error.h"

namespace gradwire {

namespace {

std::vector<uint8_t> to_bytes(const std::string& text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

std::string to_text(const std::vector<uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace

ProgressBoard::ProgressBoard(c10::intrusive_ptr<c10d::Store> store, ProgressBoardOptions options)
    : store_(std::move(store)), options_(std::move(options)) {
  GRADWIRE_CHECK(store_);
  GRADWIRE_CHECK(options_.history > 0);
  publish(encode_progress(record_));
  publisher_ = std::thread([this] { publish_loop(); });
}

ProgressBoard::~ProgressBoard() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  publisher_.join();
}

uint64_t ProgressBoard::note_issued(const std::string& description) {
  bool wake = false;
  uint64_t sequence;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sequence = ++record_.issued;
    if (record_.recent.size() == options_.history) record_.recent.erase(record_.recent.begin());
    record_.recent.push_back(description);
    dirty_ = true;
    wake = publisher_idle_;
    publisher_idle_ = false;
  }
  if (wake) wake_.notify_one();
  return sequence;
}

void ProgressBoard::publish_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  auto next_write = std::chrono::steady_clock::now();
  while (true) {
    // Idle: sleep until a collective is noted or the heartbeat is due. Recently written: let
    // notes pile up until the interval has passed, so a burst of small collectives costs one
    // write.
    publisher_idle_ = true;
    const bool noted =
        wake_.wait_for(lock, options_.heartbeat, [&] { return dirty_ || stopping_; });
    publisher_idle_ = false;
    if (noted && !stopping_) wake_.wait_until(lock, next_write, [&] { return stopping_; });
    if (stopping_ && !dirty_) return;
    if (!broken_.empty()) {
      wake_.wait(lock, [&] { return stopping_; });
      return;
    }
    ++record_.beats;
    const std::string value = encode_progress(record_);
    dirty_ = false;
    lock.unlock();
    publish(value);
    next_write = std::chrono::steady_clock::now() + options_.min_interval;
    lock.lock();
  }
}

bool ProgressBoard::publish(const std::string& value) {
  try {
    // compareSet waits for the reply (set does not): the connection's timeout bounds it, and
    // unanswered writes cannot pile up in the socket. Only this rank writes its key.
    const auto now = store_->compareSet(key(options_.rank), to_bytes(published_), to_bytes(value));
    published_ = to_text(now);
    return true;
  } catch (const std::exception& e) {
    mark_broken("writing this rank's progress failed: " + first_line(e.what()));
    return false;
  }
}

void ProgressBoard::mark_broken(const std::string& why) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (broken_.empty()) broken_ = why;
}

ProgressBoard::Snapshot ProgressBoard::read_all() const {
  std::lock_guard<std::mutex> read_lock(read_mutex_);
  Snapshot snapshot;
  snapshot.records.resize(options_.size);
  std::string broken;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    snapshot.records[options_.rank] = record_;
    broken = broken_;
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.read_budget;
  std::vector<int> absent;
  for (int r = 0; r < options_.size; ++r) {
    if (r == options_.rank || !broken.empty()) continue;
    if (std::chrono::steady_clock::now() > deadline) {
      broken = "reading took longer than " +
               format_duration(
                   std::chrono::duration_cast<std::chrono::milliseconds>(options_.read_budget));
      break;
    }
    try {
      // check() first: get() of a key nobody wrote would wait for it.
      if (!store_->check({key(r)})) {
        absent.push_back(r);
        continue;
      }
      const std::string text = to_text(store_->get(key(r)));
      snapshot.records[r] = decode_progress(text);
      if (!snapshot.records[r]) absent.push_back(r);
    } catch (const std::exception& e) {
      // The reply may still come and would answer the next request: the connection is done.
      broken = "the rendezvous store did not answer: " + first_line(e.what());
      mark_broken(broken);
    }
  }
  if (!broken.empty()) {
    snapshot.problem = broken;
  } else if (!absent.empty()) {
    snapshot.problem = "no progress record in the store";
  }
  return snapshot;
}

c10::intrusive_ptr<c10d::Store> connect_board_store(const c10::intrusive_ptr<c10d::Store>& store,
                                                    std::chrono::milliseconds timeout) {
  const auto* tcp = dynamic_cast<const c10d::TCPStore*>(store.get());
  if (tcp == nullptr) return store;
  c10d::TCPStoreOptions options;
  options.port = tcp->getPort();
  options.isServer = false;
  options.numWorkers = c10::nullopt;
  options.waitWorkers = false;
  // libtorch 1.13 rounds the connect timeout down to whole seconds: below 1 s it never connects.
  options.timeout = std::max(timeout, std::chrono::milliseconds(1000));
  // Every request on this connection times out: a stopped host cannot hold the error path.
  return connect_tcp_store(tcp->getHost(), options);
}

}  // namespace gradwire
