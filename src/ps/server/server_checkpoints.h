// When and where a parameter server writes its checkpoint files (server-internal): on request
// (the Checkpoint call), after every `every_steps` applied steps of a table, and at shutdown;
// and reading them all back at start. The file format is the core's (ps/checkpoint.h).
//
// Thread safety: every member may be called from any thread; mutex_ serialises writes (two
// handler threads never write the same file at once) and guards the last checkpointed steps.
// Blocking: writes run on the calling thread (a handler thread or shutdown()).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ps/core/checkpoint.h"
#include "ps/core/table_shard.h"

namespace gradwire::ps {

class ServerCheckpoints {
 public:
  // `dir` empty: checkpoints are off. every_steps 0: only on request and at shutdown.
  ServerCheckpoints(std::string dir, int64_t every_steps);

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  // Creates the directory when missing (ConfigError when it cannot) and reads every checkpoint
  // in it; the first damaged file throws gradwire::Error naming it.
  std::vector<ShardSnapshot> read_all() const;

  // Writes each shard's file now; returns the paths. Throws the first write error.
  // Precondition: enabled().
  std::vector<std::string> write_all(const std::vector<std::shared_ptr<TableShard>>& shards);

  // Writes `shard` when checkpoints are on, every_steps > 0 and at least every_steps steps were
  // applied since its last file. Never throws: a failed write is reported on stderr and tried
  // again after the next step.
  void after_update(const TableShard& shard);

 private:
  std::string write_locked(const TableShard& shard);  // requires mutex_

  const std::string dir_;
  const int64_t every_steps_;
  std::mutex mutex_;
  std::map<std::string, int64_t> written_step_;  // table -> step of its last file; by mutex_
};

}  // namespace gradwire::ps
