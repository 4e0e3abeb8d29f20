// The tables of one parameter server: name -> TableShard, created by CreateTable calls or
// restored from checkpoint files at start (server-internal).
//
// Restored shards: when the checkpoint directory holds exactly one file of a table, its shard is
// served at once (Lookup works before any CreateTable). When it holds several (servers sharing a
// directory), they wait as snapshots until a CreateTable names this server's index and count.
//
// Thread safety: every member may be called from any thread. mutex_ guards only the maps; shards
// are created and restored outside it and handed out as shared_ptr, so calls on different tables
// never wait for each other (each TableShard has its own lock). Blocking: create() initialises a
// table's rows on the calling thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gradwire/ps/table.h"
#include "ps/core/table_shard.h"

namespace gradwire::ps {

struct CreatedTable {
  std::shared_ptr<TableShard> shard;
  bool created = false;  // false: it existed (or was restored) with an equal config
};

class TableRegistry {
 public:
  // Takes the snapshots read from the checkpoint directory (see the top of this file).
  void add_restored(std::vector<ShardSnapshot> snapshots);

  // The shard of `config` on server `server_index` of `num_servers`: the existing one when its
  // config is the same table, else a restored or a new one. InvalidArgument naming the
  // difference when a table of that name exists with another config or shard position.
  // Preconditions: validate(config) passed, 0 <= server_index < num_servers.
  CreatedTable create(const TableConfig& config, int server_index, int num_servers);

  // nullptr when no table of that name is served.
  std::shared_ptr<TableShard> find(const std::string& name) const;
  // Every served shard, by name.
  std::vector<std::shared_ptr<TableShard>> all() const;

 private:
  // nullopt-like empty pointer when no pending snapshot of `name` is this shard's.
  std::unique_ptr<ShardSnapshot> take_pending(const std::string& name, int server_index,
                                              int num_servers);

  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<TableShard>> tables_;  // guarded by mutex_
  std::map<std::string, std::vector<ShardSnapshot>> pending_;  // guarded by mutex_
};

// "table 'emb' exists with 300 x 64, asked 300 x 32" (or the shard position that differs).
std::string describe_conflict(const TableConfig& existing, int existing_index, int existing_count,
                              const TableConfig& asked, int asked_index, int asked_count);

}  // namespace gradwire::ps
