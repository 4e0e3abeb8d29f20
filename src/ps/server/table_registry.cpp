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

std::unique_ptr<ShardSnapshot> TableRegistry::take_pending(const std::string& name,
                                                           int server_index, int num_servers) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto found = pending_.find(name);
  if (found == pending_.end()) return nullptr;
  auto& group = found->second;
  for (auto it = group.begin(); it != group.end(); ++it) {
    if (it->server_index == server_index && it->num_servers == num_servers) {
      auto snapshot = std::make_unique<ShardSnapshot>(std::move(*it));
      pending_.erase(found);  // the others belong to other servers
      return snapshot;
    }
  }
  return nullptr;
}

CreatedTable TableRegistry::create(const TableConfig& config, int server_index, int num_servers) {
  const auto existing_result = [&](const std::shared_ptr<TableShard>& shard) {
    if (!same_table(shard->config(), config) || shard->server_index() != server_index ||
        shard->num_servers() != num_servers) {
      throw InvalidArgument(describe_conflict(shard->config(), shard->server_index(),
                                              shard->num_servers(), config, server_index,
                                              num_servers));
    }
    return CreatedTable{shard, false};
  };
  if (std::shared_ptr<TableShard> shard = find(config.name)) return existing_result(shard);

  // Built outside the lock: initialising rows can take a while.
  std::shared_ptr<TableShard> shard;
  bool created = true;
  if (std::unique_ptr<ShardSnapshot> snapshot =
          take_pending(config.name, server_index, num_servers)) {
    if (!same_table(snapshot->config, config)) {
      throw InvalidArgument(describe_conflict(snapshot->config, snapshot->server_index,
                                              snapshot->num_servers, config, server_index,
                                              num_servers) +
                            " in its checkpoint");
    }
    shard = TableShard::restore(std::move(*snapshot));
    created = false;
  } else {
    shard = std::make_shared<TableShard>(config, server_index, num_servers);
  }

  const std::lock_guard<std::mutex> lock(mutex_);
  const auto [it, inserted] = tables_.emplace(config.name, shard);
  if (!inserted) return existing_result(it->second);  // another call created it meanwhile
  return CreatedTable{shard, created};
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
