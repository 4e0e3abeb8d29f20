#include "ps/server/table_registry.h"

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

void TableRegistry::add_restored(std::vector<ShardSnapshot> snapshots) {
  std::map<std::string, std::vector<ShardSnapshot>> by_name;
  for (ShardSnapshot& snapshot : snapshots) {
    const std::string name = snapshot.config.name;
    by_name[name].push_back(std::move(snapshot));
  }
  for (auto& [name, group] : by_name) {
    if (group.size() == 1) {
      std::shared_ptr<TableShard> shard = TableShard::restore(std::move(group.front()));
      const std::lock_guard<std::mutex> lock(mutex_);
      tables_[name] = std::move(shard);
    } else {
      const std::lock_guard<std::mutex> lock(mutex_);
      auto& pending = pending_[name];
      for (ShardSnapshot& snapshot : group) pending.push_back(std::move(snapshot));
    }
  }
}

std::unique_ptr<ShardSnapshot> TableRegistry::take_pending_locked(const TableConfig& config,
                                                                  int server_index,
                                                                  int num_servers) {
  const auto found = pending_.find(config.name);
  if (found == pending_.end()) return nullptr;
  auto& group = found->second;
  for (auto it = group.begin(); it != group.end(); ++it) {
    if (it->server_index != server_index || it->num_servers != num_servers) continue;
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
                                   std::chrono::steady_clock::time_point deadline) {
  const auto existing_result = [&](const std::shared_ptr<TableShard>& shard) {
    if (!same_table(shard->config(), config) || shard->server_index() != server_index ||
        shard->num_servers() != num_servers) {
      throw InvalidArgument(describe_conflict(shard->config(), shard->server_index(),
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
        const std::shared_future<std::shared_ptr<TableShard>> other = found->second;
        lock.unlock();
        if (other.wait_until(deadline) != std::future_status::ready) {
          throw TimeoutError("gradwire: table '" + config.name +
                             "' is still being built by another CreateTable call; try again");
        }
        continue;  // built (then found above) or failed (then built here)
      }
      snapshot = take_pending_locked(config, server_index, num_servers);
      building_[config.name] = built.get_future().share();
    }
    // Built outside the lock: initialising rows can take a while.
    std::shared_ptr<TableShard> shard;
    try {
      shard = snapshot ? std::shared_ptr<TableShard>(TableShard::restore(*snapshot))
                       : std::make_shared<TableShard>(config, server_index, num_servers);
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

std::vector<std::shared_ptr<TableShard>> TableRegistry::all() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<TableShard>> shards;
  for (const auto& [name, shard] : tables_) shards.push_back(shard);
  return shards;
}

}  // namespace gradwire::ps
