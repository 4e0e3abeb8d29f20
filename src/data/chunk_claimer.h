// ChunkClaimer: the dynamic partition's claims of one ShardedRecordReader (a ClaimSchedule per
// epoch, chunk_assignment.h), made one claim ahead of the reading on a thread of their own, so
// that a counter round trip (a TCP exchange with rank 0's store) overlaps the reading of the
// previous claim instead of stalling it (Note [claim ahead]).
//
// Per epoch: start_epoch(key_prefix, segment_sizes) on the reader's consumer thread, then next()
// on the reader's background thread until it returns nullopt. The first range of an epoch is the
// rank's implicit one (no round trip); every range next() returns has the following claim already
// in flight. Segment v's counter is key_prefix + "/" + v. Each position goes to exactly one caller
// of next() among all ranks, unless its epoch is abandoned (cancel(), start_epoch() again,
// destruction): a claim in flight then is dropped unread, as the chunks a destroyed reader had
// claimed always were.
//
// Thread safety: start_epoch() and cancel() on one thread, next() on another, never two next() at
// once; start_epoch() only while no next() runs (the reader joins its background thread first).
// Blocking: next() waits for the claim in flight, which the counter bounds (a store counter throws
// TimeoutError after its timeout); cancel() wakes it. Destruction waits for the round trip in
// flight, if any. Errors of the counter are thrown by next() on its caller's thread (again on
// every later call of the epoch); the claiming thread itself never throws.
//
// Timeline (docs/timeline.md, category "data"): each counter round trip is a span "claim chunks"
// (segment, from_back, chunks) on the claiming thread's track, "data claims".
//
// Header-only because it is private to sharded_reader.cpp (and its tests).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "chunk_assignment.h"
#include "gradwire/common/error.h"
#include "gradwire/common/timeline.h"
#include "gradwire/data/shared_counter.h"

namespace gradwire::data::detail {

// Note [claim ahead]: an epoch of a page-cached data set takes milliseconds, a store round trip
// 50-250 us on a busy 2-core machine (the store's thread and the client's must both be scheduled),
// so claims made in line cost more than the reading. The claim made ahead is only in time if
// reading the range before it takes longer than the round trip, so the claimer measures both
// (moving averages of the round trips and of the reader's time per chunk between its next() calls,
// kept across epochs) and claims enough of its own segment per round trip that the reading takes
// twice the round trip (dynamic_own_claim_floor: 4 to 16 chunks). A rank then holds at most two
// claims unread when its segment runs out; the others' tails are taken from the back one chunk at
// first.
class ChunkClaimer {
 public:
  ChunkClaimer(std::shared_ptr<SharedCounter> counter, int rank)
      : counter_(std::move(counter)), rank_(rank) {
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

  // Begins an epoch whose ranks own segments of `segment_sizes` positions, abandoning the previous
  // one. The first counter claim goes out at once (the implicit range needs none).
  void start_epoch(std::string key_prefix, std::vector<uint64_t> segment_sizes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++generation_;
      key_prefix_ = std::move(key_prefix);
      schedule_.emplace(std::move(segment_sizes), rank_);
      first_taken_ = false;
      handed_out_size_ = 0;
      cancelled_ = false;
      result_ = std::nullopt;
      error_ = nullptr;
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

  // The next positions this rank reads; nullopt when every segment is exhausted (or the epoch
  // was cancelled). Throws what the counter threw.
  std::optional<SegmentRange> next() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!schedule_) return std::nullopt;
    note_reading_time_locked();
    if (!first_taken_) {
      first_taken_ = true;
      const SegmentRange first = schedule_->first_range();
      if (!first.empty()) return handed_out_locked(first);
    }
    while (true) {
      wake_reader_.wait(
          lock, [&] { return cancelled_ || shutdown_ || error_ || result_ || !in_flight_; });
      if (cancelled_ || shutdown_) return std::nullopt;
      if (error_) std::rethrow_exception(error_);
      if (!result_) return std::nullopt;  // nothing in flight: every segment is exhausted
      const SegmentRange range = schedule_->record(claim_, *result_);
      result_ = std::nullopt;
      request_locked();
      if (in_flight_) wake_claimer_.notify_one();
      if (!range.empty()) return handed_out_locked(range);  // else too late: wait for the next
    }
  }

 private:
  using Clock = std::chrono::steady_clock;

  static double microseconds_since(Clock::time_point start) {
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  }
  static double moving_average(double average, double sample) {
    return average > 0 ? 0.75 * average + 0.25 * sample : sample;
  }

  // Guarded by mutex_: the reader took `range` to read now.
  SegmentRange handed_out_locked(const SegmentRange& range) {
    handed_out_at_ = Clock::now();
    handed_out_size_ = range.size();
    return range;
  }

  // Guarded by mutex_: the reader is back for more; the time since the last range it took went
  // into reading that range.
  void note_reading_time_locked() {
    if (handed_out_size_ == 0) return;
    const double per_chunk =
        microseconds_since(handed_out_at_) / static_cast<double>(handed_out_size_);
    chunk_us_ = moving_average(chunk_us_, per_chunk);
    handed_out_size_ = 0;
  }

  // Guarded by mutex_: asks the thread for the schedule's next claim, if there is one.
  void request_locked() {
    const std::optional<SegmentClaim> claim =
        schedule_->next_claim(dynamic_own_claim_floor(round_trip_us_, chunk_us_));
    in_flight_ = claim.has_value();
    request_pending_ = in_flight_;
    requested_at_ = Clock::now();
    if (claim) claim_ = *claim;
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_claimer_.wait(lock, [&] { return shutdown_ || request_pending_; });
      if (shutdown_) return;
      request_pending_ = false;
      const uint64_t generation = generation_;
      const std::string key = key_prefix_ + "/" + std::to_string(claim_.segment);
      const int64_t delta = claim_.delta();
      const SegmentClaim claim = claim_;
      lock.unlock();
      int64_t value = 0;
      std::exception_ptr error;
      {
        if (timeline::enabled() && !named_on_timeline_) {
          timeline::name_thread("data claims");
          named_on_timeline_ = true;
        }
        timeline::Span span(
            "claim chunks", "data",
            {{"segment", claim.segment}, {"from_back", claim.from_back}, {"chunks", claim.size}});
        try {
          value = counter_->add(key, delta);
        } catch (...) {
          error = std::current_exception();
        }
      }
      lock.lock();
      // From the request on: waking this thread is part of the cost on a busy machine.
      round_trip_us_ = moving_average(round_trip_us_, microseconds_since(requested_at_));
      if (generation != generation_) continue;  // its epoch was abandoned: dropped
      if (error) {
        error_ = error;
        in_flight_ = false;
      } else {
        result_ = value;
      }
      wake_reader_.notify_all();
    }
  }

  const std::shared_ptr<SharedCounter> counter_;
  const int rank_;

  std::mutex mutex_;
  std::condition_variable wake_claimer_;  // a request or shutdown
  std::condition_variable wake_reader_;   // a result, an error, cancel or shutdown
  // Guarded by mutex_.
  uint64_t generation_ = 0;  // one per start_epoch: results of older ones are dropped
  std::string key_prefix_;
  std::optional<ClaimSchedule> schedule_;
  bool first_taken_ = true;
  bool cancelled_ = false;
  bool shutdown_ = false;
  bool request_pending_ = false;  // the thread has not picked the request up yet
  bool in_flight_ = false;        // claim_ was asked for and its answer not recorded yet
  SegmentClaim claim_;
  std::optional<int64_t> result_;  // the counter's answer to claim_
  std::exception_ptr error_;
  // Moving averages for Note [claim ahead] (0: none yet), kept across epochs.
  double round_trip_us_ = 0;
  double chunk_us_ = 0;
  Clock::time_point requested_at_;   // when claim_ was asked for
  Clock::time_point handed_out_at_;  // when the reader took its last range
  uint64_t handed_out_size_ = 0;     // that range's size; 0: nothing to time
  bool named_on_timeline_ = false;   // claiming thread only: its track named "data claims"

  std::thread thread_;  // last: started once the members above exist
};

}  // namespace gradwire::data::detail
