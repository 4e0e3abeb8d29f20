// The tables of one parameter server: name -> TableShard, created by CreateTable calls or
// restored from checkpoint files at start (server-internal).
//
// Restored shards: when the checkpoint directory holds exactly one shard of a table, it is served
// at once (Lookup works before any CreateTable). When it holds several (servers sharing a
// directory), they wait as snapshots until a CreateTable with an equal config names this
// server's index and count; a CreateTable with another config is refused and the snapshots stay.
//
// One build per table: the first CreateTable of a name builds (or restores) its shard; creators
// arriving meanwhile wait for that build instead of building their own (one allocation), then
// compare configs. A failed build leaves nothing behind (a taken snapshot goes back).
//
// Limits (RegistryLimits): the tables held (served, being built, restored snapshots waiting) and
// the sum of their shard_bytes() are bounded. A new table is counted and its bytes reserved under
// the lock before its build starts, so concurrent creators of different tables cannot together
// pass the limits; a failed build releases them. Above a limit create() throws ResourceLimitError
// and nothing changes. Restored tables (at start, or a waiting snapshot a CreateTable takes) are
// never refused, but count. Every shard, created or restored, shares the registry's
// PendingBudget (max_total_pending_bytes): the sync pushes all tables hold at once.
//
// Thread safety: every member may be called from any thread. mutex_ guards only the maps; shards
// are created and restored outside it and handed out as shared_ptr, so calls on different tables
// never wait for each other (each TableShard has its own lock). Blocking: create() initialises a
// table's rows on the calling thread, or waits for another call's build of the same table.
#pragma once

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gradwire/ps/table.h"
#include "ps/core/table_shard.h"

namespace gradwire::ps {

// Bounds of one server's tables (ServerOptions has the same fields, documented there).
struct RegistryLimits {
  int64_t max_tables = 1024;
  int64_t max_total_table_bytes = int64_t{16} << 30;
  int64_t max_pending_bytes = kDefaultMaxPendingBytes;  // given to every shard
  // The limit of the PendingBudget every shard (new or restored) shares.
  int64_t max_total_pending_bytes = int64_t{4} << 30;
};

struct CreatedTable {
  std::shared_ptr<TableShard> shard;
  bool created = false;  // false: it existed (or was restored) with an equal config
};

class TableRegistry {
 public:
  explicit TableRegistry(RegistryLimits limits = {});

  // Takes the snapshots read from the checkpoint directory (see the top of this file).
  void add_restored(std::vector<ShardSnapshot> snapshots);

  // The shard of `config` on server `server_index` of `num_servers`: the existing one when its
  // config is the same table, else a restored or a new one. InvalidArgument naming the
  // difference when a table of that name exists (or waits restored) with another config or
  // shard position. TimeoutError when another call's build of the table is not done by
  // `deadline`. ResourceLimitError when a new table would exceed max_tables or
  // max_total_table_bytes (see the top). `any_num_trainers` (an elastic job's trainer): an
  // existing or restored table is the same whatever its num_trainers (the membership's, see
  // TableShard::set_trainers). Preconditions: validate(config) passed,
  // 0 <= server_index < num_servers.
  CreatedTable create(const TableConfig& config, int server_index, int num_servers,
                      std::chrono::steady_clock::time_point deadline =
                          std::chrono::steady_clock::time_point::max(),
                      bool any_num_trainers = false);

  // nullptr when no table of that name is served.
  std::shared_ptr<TableShard> find(const std::string& name) const;
  // Every served shard, by name.
  std::vector<std::shared_ptr<TableShard>> all() const;

  // What the limits count: tables served, being built or restored and waiting, and the sum of
  // their shard_bytes() (the waiting snapshots of every shard position held here).
  struct Held {
    int64_t tables = 0;
    int64_t bytes = 0;
  };
  Held held() const;
  // The budget of sync push bytes every shard here charges (max_total_pending_bytes).
  const PendingBudget& pending_budget() const { return *pending_budget_; }

 private:
  // Takes this shard's pending snapshot of `config.name` (empty pointer when there is none);
  // InvalidArgument, the snapshot kept, when its config differs. Requires mutex_.
  std::unique_ptr<ShardSnapshot> take_pending_locked(const TableConfig& config, int server_index,
                                                     int num_servers, bool any_num_trainers);
  Held held_locked() const;
  // Throws ResourceLimitError unless a new table of `bytes` fits the limits. Requires mutex_.
  void check_room_locked(const TableConfig& config, int server_index, int num_servers,
                         int64_t bytes) const;

  // A build in progress: the shard when done (nullptr when it failed), and its reserved bytes.
  struct Build {
    std::shared_future<std::shared_ptr<TableShard>> shard;
    int64_t bytes = 0;
  };

  const RegistryLimits limits_;
  const std::shared_ptr<PendingBudget> pending_budget_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<TableShard>> tables_;  // guarded by mutex_
  std::map<std::string, std::vector<ShardSnapshot>> pending_;  // guarded by mutex_
  std::map<std::string, Build> building_;                      // guarded by mutex_
};

// The limits every table shard a server holds must keep, whether CreateTable asks for it or a
// checkpoint restores it (ServerOptions has the same fields, documented there).
struct TableLimits {
  int64_t max_trainers = 1024;
  int64_t max_table_bytes = int64_t{8} << 30;
};

// Throws ResourceLimitError, naming the limit, its value, what was asked and the flag that raises
// it, when shard `server_index` of `num_servers` of `config` exceeds `limits`: more num_trainers
// than max_trainers (a sync table keeps state per trainer), or more shard_bytes() than
// max_table_bytes. Preconditions: validate(config) passed, 0 <= server_index < num_servers.
void check_table_limits(const TableConfig& config, int server_index, int num_servers,
                        const TableLimits& limits);

// "table 'emb' exists with 300 x 64, asked 300 x 32" (or the shard position that differs).
std::string describe_conflict(const TableConfig& existing, int existing_index, int existing_count,
                              const TableConfig& asked, int asked_index, int asked_count);

}  // namespace gradwire::ps
