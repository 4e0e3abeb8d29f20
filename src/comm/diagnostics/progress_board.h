// The progress board: every rank of a communicator publishes in the rendezvous store how far it
// got (a ProgressRecord, diagnostics/desync_report.h, under "<communicator prefix>/progress/<rank>"), so that
// a rank whose collective timed out can read everyone's record and say who never reached it or
// called another one, even when those ranks can no longer answer (stopped, hung, swapped out).
// See docs/communicator.md, "Desync reports".
//
// Cost on the collective's path: note_issued() only updates memory (a short critical section and,
// when the publisher sleeps, one wake-up). A publisher thread writes the record with one store
// round trip, at most once per `min_interval` and at least once per `heartbeat`, so a rank's record
// in the store lags its last collective by at most about min_interval plus one round trip. Writes
// wait for the store's reply (compareSet, not set), so at most one write is in flight and none can
// block on a full socket.
//
// Thread safety: note_issued() and read_all() may be called from any thread. Nothing throws on
// the publisher thread: a store failure stops publishing and is reported by read_all().
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "comm/diagnostics/desync_report.h"

namespace gradwire {

struct ProgressBoardOptions {
  std::string key_prefix;  // "gradwire/world/progress/": the rank is appended
  int rank = 0;            // this rank in the communicator
  int size = 1;            // ranks of the communicator
  // Descriptions of recent collectives carried by each record, so that the collective of a rank
  // that ran a few ahead can still be compared. Default 8.
  size_t history = 8;
  // Least time between two writes of this rank's record. Default 2 ms.
  std::chrono::microseconds min_interval{2000};
  // Every rank writes its record at least this often, so that a record that stops changing
  // tells of a stopped or hung process (silence_window()). Default 250 ms.
  std::chrono::milliseconds heartbeat{250};
  // Limit for read_all() as a whole (each store request is bounded by the store connection's own
  // timeout, connect_board_store). Default 2 s.
  std::chrono::milliseconds read_budget{2000};
};

class ProgressBoard {
 public:
  // `store`: the connection from connect_board_store(). Publishes the empty record (blocking, one
  // round trip, bounded by the connection's timeout) and starts the publisher thread.
  ProgressBoard(c10::intrusive_ptr<c10d::Store> store, ProgressBoardOptions options);
  // Publishes a pending record, then stops the publisher (bounded by the connection's timeout).
  ~ProgressBoard();
  ProgressBoard(const ProgressBoard&) = delete;
  ProgressBoard& operator=(const ProgressBoard&) = delete;

  // Numbers the collective this rank has just issued (1, 2, ...) and queues the record for
  // publication. Non-blocking.
  uint64_t note_issued(const std::string& description);

  struct Snapshot {
    std::vector<std::optional<ProgressRecord>> records;  // by rank; nullopt: not read
    std::string problem;  // why some records are missing ("" when none is)
  };
  // Every rank's record as the store has it (this rank's from memory). Blocking, bounded by
  // read_budget; a store that stops answering fails the remaining reads, not the caller.
  Snapshot read_all() const;

  // How long a reader watches records for a missing heartbeat: three heartbeats.
  std::chrono::milliseconds silence_window() const { return options_.heartbeat * 3; }

  int rank() const { return options_.rank; }
  int size() const { return options_.size; }

 private:
  void publish_loop();
  // One write of `value` as this rank's record; false (and broken_ set) when the store failed.
  bool publish(const std::string& value);
  void mark_broken(const std::string& why) const;
  std::string key(int rank) const { return options_.key_prefix + std::to_string(rank); }

  c10::intrusive_ptr<c10d::Store> store_;
  const ProgressBoardOptions options_;

  mutable std::mutex mutex_;  // guards the members below
  std::condition_variable wake_;
  ProgressRecord record_;        // this rank's progress, newest
  bool dirty_ = false;           // record_ changed since the publisher last copied it
  bool publisher_idle_ = false;  // the publisher waits without a deadline: wake it
  bool stopping_ = false;
  mutable std::string broken_;  // why the store connection is unusable; "" while it is fine

  mutable std::mutex read_mutex_;  // one read_all() at a time
  std::string published_;  // publisher thread (and constructor) only: the value in the store
  std::thread publisher_;  // last: started once everything above exists
};

// The store connection progress boards use: a TCPStore client of its own beside `store` (same
// host and port) whose requests give up after `timeout`, so that a dead or stopped store host
// cannot hang a failing collective's error path nor block other users of `store`. `store`
// itself when it is not a TCPStore. libtorch 1.13 cannot connect with a timeout below 1 s.
c10::intrusive_ptr<c10d::Store> connect_board_store(const c10::intrusive_ptr<c10d::Store>& store,
                                                    std::chrono::milliseconds timeout);

}  // namespace gradwire
