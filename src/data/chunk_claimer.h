// ChunkClaimer: the dynamic partition's claims of one ShardedRecordReader, made one claim ahead of
// the reading on a thread of their own, so that a counter round trip (a TCP exchange with rank 0's
// store) overlaps the reading of the previous claim instead of stalling it (Note [claim ahead]).
//
// Per epoch: start_epoch(key, total) on the reader's consumer thread, then next() on the reader's
// background thread until it returns nullopt. The first range of an epoch is the rank's implicit
// one (dynamic_first_range: no round trip); every range next() returns has the following claim
// already in flight. Each range the counter hands out goes to exactly one caller of next(), unless
// its epoch is abandoned (cancel(), start_epoch() again, destruction): then it is dropped unread,
// as the chunks a destroyed reader had claimed always were.
//
// Thread safety: start_epoch() and cancel() on one thread, next() on another, never next() on
// two threads at once; start_epoch() only while no next() runs (the reader joins its background
// thread first). Blocking: next() waits for the claim in flight, which the counter bounds (a store
// counter throws TimeoutError after its timeout); cancel() wakes it. Destruction waits for the
// round trip in flight, if any. Errors of the counter are thrown by next() on its caller's thread;
// the claiming thread itself never throws.
//
// Header-only because it is private to sharded_reader.cpp (and its tests).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "gradwire/common/error.h"
#include "gradwire/data/chunk_assignment.h"
#include "gradwire/data/shared_counter.h"

namespace gradwire::data::detail {

// Note [claim ahead]: an epoch of a page-cached data set takes milliseconds, a store round trip
// 50-250 us on a busy 2-core machine (the store's thread and the client's must both be scheduled),
// so claims made in line cost more than the reading. Claiming ahead keeps at most one claim more
// per rank unread than claiming in line (the end-of-epoch balance: claims shrink to single
// chunks, so a rank holds at most its current chunk plus one when the order runs out).
class ChunkClaimer {
 public:
  ChunkClaimer(std::shared_ptr<SharedCounter> counter, int rank, int ranks)
      : counter_(std::move(counter)), rank_(rank), ranks_(ranks) {
    GRADWIRE_CHECK(counter_ != nullptr);
    thread_ = std::thread([this] { run(); });
  }

  ~ChunkClaimer() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      shutdown_ = true;
      ++generation_;  // drops whatever is in flight
    }
    wake_claimer_.notify_all();
    wake_reader_.notify_all();
    thread_.join();
  }

  ChunkClaimer(const ChunkClaimer&) = delete;
  ChunkClaimer& operator=(const ChunkClaimer&) = delete;

  // Begins an epoch of `total` positions counted in the counter `key`, abandoning the previous
  // one. The first counter claim goes out at once (the rank's implicit range needs none).
  void start_epoch(std::string key, uint64_t total) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++generation_;
      key_ = std::move(key);
      total_ = total;
      first_ = dynamic_first_range(total, rank_, ranks_);
      first_taken_ = false;
      cancelled_ = false;
      in_flight_ = false;
      result_ = std::nullopt;
      error_ = nullptr;
      claimed_up_to_ = dynamic_counter_base(total, ranks_);
      request_locked();
    }
    wake_claimer_.notify_one();
  }

  // Makes a next() that waits (or the next one) return nullopt until the next start_epoch().
  void cancel() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      cancelled_ = true;
    }
    wake_reader_.notify_all();
  }

  // The next positions this rank reads, in claim order; nullopt when the epoch's order is
  // exhausted (or cancelled). Throws what the counter threw (again on every later call).
  std::optional<PositionRange> next() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!first_taken_) {
      first_taken_ = true;
      if (!first_.empty()) return first_;
    }
    while (true) {
      wake_reader_.wait(lock, [&] {
        return cancelled_ || shutdown_ || error_ || result_.has_value() || !in_flight_;
      });
      if (cancelled_ || shutdown_) return std::nullopt;
      if (error_) std::rethrow_exception(error_);
      if (!result_) return std::nullopt;  // nothing in flight: every position is claimed
      const PositionRange range = *result_;
      result_ = std::nullopt;
      if (range.empty()) return std::nullopt;  // the order ran out under this claim
      claimed_up_to_ = range.end;
      request_locked();
      lock.unlock();
      wake_claimer_.notify_one();
      return range;
    }
  }

 private:
  // Guarded by mutex_: asks the thread for the next claim unless every position is claimed.
  void request_locked() {
    in_flight_ = claimed_up_to_ < total_;
    if (!in_flight_) return;
    claim_ = dynamic_claim_size(total_ - claimed_up_to_, ranks_);
    request_pending_ = true;
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_claimer_.wait(lock, [&] { return shutdown_ || request_pending_; });
      if (shutdown_) return;
      request_pending_ = false;
      const uint64_t generation = generation_;
      const std::string key = key_;
      const uint64_t claim = claim_;
      const uint64_t total = total_;
      lock.unlock();
      std::optional<PositionRange> range;
      std::exception_ptr error;
      try {
        const int64_t end = counter_->add(key, static_cast<int64_t>(claim));
        range = dynamic_claimed_range(total, ranks_, claim, end);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (generation != generation_) continue;  // its epoch was abandoned: dropped
      in_flight_ = false;
      result_ = range;
      error_ = error;
      wake_reader_.notify_all();
    }
  }

  const std::shared_ptr<SharedCounter> counter_;
  const int rank_;
  const int ranks_;

  std::mutex mutex_;
  std::condition_variable wake_claimer_;  // a request or shutdown
  std::condition_variable wake_reader_;   // a result, an error, cancel or shutdown
  // Guarded by mutex_.
  uint64_t generation_ = 0;  // one per start_epoch: results of older ones are dropped
  std::string key_;
  uint64_t total_ = 0;
  PositionRange first_;
  bool first_taken_ = true;
  bool cancelled_ = false;
  bool shutdown_ = false;
  bool request_pending_ = false;  // the thread has not picked the request up yet
  bool in_flight_ = false;        // a claim was asked for and its result not taken yet
  uint64_t claim_ = 0;            // size of the requested claim
  uint64_t claimed_up_to_ = 0;    // end of the order's positions known to be claimed
  std::optional<PositionRange> result_;
  std::exception_ptr error_;

  std::thread thread_;  // last: started once the members above exist
};

}  // namespace gradwire::data::detail
