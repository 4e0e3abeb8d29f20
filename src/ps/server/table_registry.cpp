#include "ps/server/table_registry.h"

#include <algorithm>
#include <limits>

#include "gradwire/common/error.h"
#include "ps/messages/service_messages.h"

namespace gradwire::ps {

std::string describe_conflict(const TableConfig& existing, int existing_index, int existing_count,
                              const TableConfig& asked, int asked_index, int asked_count) {
  std::string difference = describe_difference(existing, asked);
  if (existing_index != asked_index || existing_count != asked_count) {
    if (!difference.empty()) difference += "; ";
    difference += "as server " + std::to_string(existing_index) + " of " +
                  std::to_string(existing_count) + ", asked server " + std::to_string(asked_index) +
                  " of " + std::to_string(asked_count);
  }
  if (difference.empty()) difference = describe(existing) + ", asked " + describe(asked);
  return "table '" + existing.name + "' exists with " + difference;
}

void check_table_limits(const TableConfig& config, int server_index, int num_servers,
                        const TableLimits& limits) {
  if (config.num_trainers > limits.max_trainers) {
    throw ResourceLimitError(describe(config) + " has num_trainers " +
                             std::to_string(config.num_trainers) +
                             ", above this server's max_trainers " +
                             std::to_string(limits.max_trainers) +
                             " (a sync table keeps state per trainer); use fewer trainers or "
                             "raise --max-trainers (ServerOptions::max_trainers)");
  }
  const int64_t bytes = shard_bytes(config, server_index, num_servers);
  if (bytes > limits.max_table_bytes) {
    throw ResourceLimitError(describe(config) + " needs " + std::to_string(bytes) +
                             " bytes on server " + std::to_string(server_index) + " of " +
                             std::to_string(num_servers) +
                             ", above this server's max_table_bytes " +
                             std::to_string(limits.max_table_bytes) +
                             "; use more servers or raise the limit");
  }
}

namespace {

// a + b, at most INT64_MAX (both >= 0).
int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<int64_t>::max() : sum;
}

}  // namespace

TableRegistry::TableRegistry(RegistryLimits limits)
    : limits_(limits),
      pending_budget_(std::make_shared<PendingBudget>(limits.max_total_pending_bytes)) {}

void TableRegistry::add_restored(std::vector<ShardSnapshot> snapshots) {
  std::map<std::string, std::vector<ShardSnapshot>> by_name;
  for (ShardSnapshot& snapshot : snapshots) {
    const std::string name = snapshot.config.name;
    by_name[name].push_back(std::move(snapshot));
  }
  for (auto& [name, group] : by_name) {
    if (group.size() == 1) {
      std::shared_ptr<TableShard> shard =
          TableShard::restore(std::move(group.front()), limits_.max_pending_bytes, pending_budget_);
      const std::lock_guard<std::mutex> lock(mutex_);
      tables_[name] = std::move(shard);
    } else {
      const std::lock_guard<std::mutex> lock(mutex_);
      auto& pending = pending_[name];
      for (ShardSnapshot& snapshot : group) pending.push_back(std::move(snapshot));
    }
  }
}

std::unique_ptr<ShardSnapshot> TableRegistry::take_pending_locked(const TableConfig& asked,
                                                                  int server_index,
                                                                  int num_servers,
                                                                  bool any_num_trainers) {
  TableConfig config = asked;
  const auto found = pending_.find(config.name);
  if (found == pending_.end()) return nullptr;
  auto& group = found->second;
  for (auto it = group.begin(); it != group.end(); ++it) {
    if (it->server_index != server_index || it->num_servers != num_servers) continue;
    if (any_num_trainers) config.num_trainers = it->config.num_trainers;
    if (!same_table(it->config, config)) {
      throw InvalidArgument(describe_conflict(it->config, it->server_index, it->num_servers, config,
                                              server_index, num_servers) +
                            " in its checkpoint; the checkpoint is kept");
    }
    auto snapshot = std::make_unique<ShardSnapshot>(std::move(*it));
    pending_.erase(found);  // the others belong to other servers
    return snapshot;
  }
  return nullptr;
}

CreatedTable TableRegistry::create(const TableConfig& config, int server_index, int num_servers,
                                   std::chrono::steady_clock::time_point deadline,
                                   bool any_num_trainers) {
  const auto existing_result = [&](const std::shared_ptr<TableShard>& shard) {
    const TableConfig existing = shard->current_config();
    TableConfig asked = config;
    if (any_num_trainers) asked.num_trainers = existing.num_trainers;
    if (!same_table(existing, asked) || shard->server_index() != server_index ||
        shard->num_servers() != num_servers) {
      throw InvalidArgument(describe_conflict(existing, shard->server_index(),
                                              shard->num_servers(), config, server_index,
                                              num_servers));
    }
    return CreatedTable{shard, false};
  };
  for (;;) {
    std::promise<std::shared_ptr<TableShard>> built;
    std::unique_ptr<ShardSnapshot> snapshot;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (const auto found = tables_.find(config.name); found != tables_.end()) {
        return existing_result(found->second);
      }
      if (const auto found = building_.find(config.name); found != building_.end()) {
        const std::shared_future<std::shared_ptr<TableShard>> other = found->second.shard;
        lock.unlock();
        if (other.wait_until(deadline) != std::future_status::ready) {
          throw TimeoutError("gradwire: table '" + config.name +
                             "' is still being built by another CreateTable call; try again");
        }
        continue;  // built (then found above) or failed (then built here)
      }
      snapshot = take_pending_locked(config, server_index, num_servers, any_num_trainers);
      const int64_t bytes = shard_bytes(config, server_index, num_servers);
      // A restored table counted already (as a waiting snapshot); a new one must fit.
      if (!snapshot) check_room_locked(config, server_index, num_servers, bytes);
      building_[config.name] = Build{built.get_future().share(), bytes};
    }
    // Built outside the lock: initialising rows can take a while.
    std::shared_ptr<TableShard> shard;
    try {
      shard = snapshot ? std::shared_ptr<TableShard>(TableShard::restore(
                             *snapshot, limits_.max_pending_bytes, pending_budget_))
                       : std::make_shared<TableShard>(config, server_index, num_servers,
                                                      limits_.max_pending_bytes, pending_budget_);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (snapshot) pending_[config.name].push_back(std::move(*snapshot));
      building_.erase(config.name);
      built.set_value(nullptr);
      throw;
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    tables_[config.name] = shard;
    building_.erase(config.name);
    built.set_value(shard);
    return CreatedTable{shard, snapshot == nullptr};
  }
}

std::shared_ptr<TableShard> TableRegistry::find(const std::string& name) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto found = tables_.find(name);
  return found == tables_.end() ? nullptr : found->second;
}

TableRegistry::Held TableRegistry::held() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return held_locked();
}

TableRegistry::Held TableRegistry::held_locked() const {
  Held held;
  held.tables = static_cast<int64_t>(tables_.size() + building_.size() + pending_.size());
  for (const auto& [name, shard] : tables_) {
    held.bytes = saturating_add(
        held.bytes, shard_bytes(shard->config(), shard->server_index(), shard->num_servers()));
  }
  for (const auto& [name, build] : building_) held.bytes = saturating_add(held.bytes, build.bytes);
  for (const auto& [name, group] : pending_) {
    for (const ShardSnapshot& snapshot : group) {
      held.bytes = saturating_add(
          held.bytes, shard_bytes(snapshot.config, snapshot.server_index, snapshot.num_servers));
    }
  }
  return held;
}

void TableRegistry::check_room_locked(const TableConfig& config, int server_index, int num_servers,
                                      int64_t bytes) const {
  const Held held = held_locked();
  const std::string asked = "table '" + config.name + "' (" + describe(config) + ", server " +
                            std::to_string(server_index) + " of " + std::to_string(num_servers) +
                            ")";
  const std::string counted =
      " (tables served, being built, or restored from checkpoints and waiting for CreateTable)";
  if (held.tables >= limits_.max_tables) {
    throw ResourceLimitError(
        "gradwire: " + asked + " refused: this server holds " + std::to_string(held.tables) +
        " table(s)" + counted + ", and one more would exceed its max_tables " +
        std::to_string(limits_.max_tables) +
        "; spread the tables over more servers or raise --max-tables (ServerOptions::max_tables)");
  }
  if (bytes > limits_.max_total_table_bytes - std::min(held.bytes, limits_.max_total_table_bytes)) {
    throw ResourceLimitError("gradwire: " + asked + " refused: it needs " + std::to_string(bytes) +
                             " bytes here and this server holds " + std::to_string(held.bytes) +
                             " bytes of tables" + counted +
                             ", together above its max_total_table_bytes " +
                             std::to_string(limits_.max_total_table_bytes) +
                             "; use more servers or raise --max-total-table-bytes "
                             "(ServerOptions::max_total_table_bytes)");
  }
}

std::vector<std::shared_ptr<TableShard>> TableRegistry::all() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<TableShard>> shards;
  for (const auto& [name, shard] : tables_) shards.push_back(shard);
  return shards;
}

}  // namespace gradwire::ps
