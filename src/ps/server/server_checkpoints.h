// When and where a parameter server writes its checkpoint files (server-internal): on request
// (the Checkpoint call), after every `every_steps` applied steps of a table, and at shutdown;
// reading the newest back at start, and an older one when a restarted group resumes there. The
// file format is the core's (ps/checkpoint.h).
//
// Generations: each write is a file of its own, "emb.shard0of2.step12.gwps", and the newest
// `keep` files of a shard stay (older ones are removed after a write). A restarted group's
// trainers resume from their own checkpoint, which may be one generation older than the servers'
// newest (a trainer killed between the servers' write and its own), so keep >= 2. Files of an
// abandoned timeline (steps after the one a group resumed at) are removed by forget_after().
// Files named without a step (written before generations existed) are read as one more
// generation.
//
// Timeline (docs/timeline.md, category "ps"): each file written is a span "checkpoint write"
// (table, path, step, bytes), write_all() a span "checkpoint" around its files (path: the
// directory, tables, bytes), and a write that fails the instant "checkpoint write failed".
//
// Thread safety: every member may be called from any thread. Writes of one table are serialised
// by that table's own mutex (a checkpoint of one table never waits for another's);
// mutex_ guards only the map of those mutexes and the last checkpointed steps. Lock order:
// table mutex, then mutex_; a shard's lock is taken inside both (snapshot()). Blocking: writes
// and reads run on the calling thread (a handler thread or shutdown()).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ps/core/checkpoint.h"
#include "ps/core/table_shard.h"

namespace gradwire::ps {

// "emb.shard0of2.step12.gwps".
std::string generation_file_name(const std::string& table, int server_index, int num_servers,
                                 int64_t step);

// Told of every write of a shard's file: its table, how long it took and whether it succeeded
// (the server's metrics). Called on the writing thread, with the table's write mutex held.
using CheckpointObserver = std::function<void(const std::string& table,
                                              std::chrono::steady_clock::duration took, bool ok)>;

class ServerCheckpoints {
 public:
  // `dir` empty: checkpoints are off. every_steps 0: only on request and at shutdown. keep >= 1
  // generations per shard (ConfigError otherwise). `observer` (may be empty) is told of each write.
  ServerCheckpoints(std::string dir, int64_t every_steps, int keep = 2,
                    CheckpointObserver observer = {});

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  // Creates the directory when missing (ConfigError when it cannot), removes the temporary files
  // of writes that did not finish (their writers are gone; reported on stderr) and reads the
  // newest file of every shard in it; the first damaged one throws gradwire::Error naming it.
  // `check` sees each snapshot read, before anything is built of it (the server checks the
  // limits CreateTable checks, check_table_limits); a ResourceLimitError it throws becomes a
  // ConfigError naming the file.
  std::vector<ShardSnapshot> read_all(
      const std::function<void(const ShardSnapshot&)>& check = {}) const;

  // Writes each shard's file now; returns the paths. Throws the first write error.
  // Precondition: enabled().
  std::vector<std::string> write_all(const std::vector<std::shared_ptr<TableShard>>& shards);

  // Writes `shard` when checkpoints are on, every_steps > 0 and at least every_steps steps were
  // applied since its last file. Never throws: a failed write is reported on stderr and tried
  // again after the next step.
  void after_update(const TableShard& shard);

  // The shard's file of `step`, read and checked; nullopt when there is none (or checkpoints are
  // off). Error for a damaged file.
  std::optional<ShardSnapshot> read_step(const std::string& table, int server_index,
                                         int num_servers, int64_t step) const;
  // The steps of the shard's files, ascending.
  std::vector<int64_t> steps_held(const std::string& table, int server_index,
                                  int num_servers) const;
  // The table was rewound to `step`: removes the shard's files of later steps (an abandoned
  // timeline) and counts periodic checkpoints from `step`.
  void forget_after(const std::string& table, int server_index, int num_servers, int64_t step);

 private:
  // The mutex that serialises writes of `table`.
  std::shared_ptr<std::mutex> table_mutex(const std::string& table);
  // Requires the table's mutex.
  std::string write_locked(const TableShard& shard);

  const std::string dir_;
  const int64_t every_steps_;
  const int keep_;
  const CheckpointObserver observer_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<std::mutex>> table_mutexes_;  // by mutex_
  std::map<std::string, int64_t> written_step_;  // table -> step of its last file; by mutex_
  // Bytes of the files written while a timeline ran (the span "checkpoint" of write_all).
  std::atomic<int64_t> written_bytes_{0};
};

}  // namespace gradwire::ps
