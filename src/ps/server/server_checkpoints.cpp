#include "ps/server/server_checkpoints.h"

#include <filesystem>
#include <iostream>
#include <system_error>

#include "gradwire/common/error.h"

namespace gradwire::ps {

ServerCheckpoints::ServerCheckpoints(std::string dir, int64_t every_steps)
    : dir_(std::move(dir)), every_steps_(every_steps) {}

std::vector<ShardSnapshot> ServerCheckpoints::read_all() const {
  std::vector<ShardSnapshot> snapshots;
  if (!enabled()) return snapshots;
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error || !std::filesystem::is_directory(dir_)) {
    throw ConfigError("gradwire: cannot use the checkpoint directory '" + dir_ +
                      "': " + (error ? error.message() : std::string("not a directory")) +
                      ". Pass a writable directory to --checkpoint-dir.");
  }
  for (const std::string& path : list_checkpoints(dir_)) {
    snapshots.push_back(read_checkpoint(path));
  }
  return snapshots;
}

std::string ServerCheckpoints::write_locked(const TableShard& shard) {
  ShardSnapshot snapshot = shard.snapshot();
  const std::string path =
      dir_ + "/" +
      checkpoint_file_name(snapshot.config.name, snapshot.server_index, snapshot.num_servers);
  write_checkpoint(path, snapshot);
  written_step_[snapshot.config.name] = snapshot.step;
  return path;
}

std::vector<std::string> ServerCheckpoints::write_all(
    const std::vector<std::shared_ptr<TableShard>>& shards) {
  GRADWIRE_CHECK(enabled());
  const std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> paths;
  for (const auto& shard : shards) paths.push_back(write_locked(*shard));
  return paths;
}

void ServerCheckpoints::after_update(const TableShard& shard) {
  if (!enabled() || every_steps_ <= 0) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  const int64_t step = shard.step();
  const auto found = written_step_.find(shard.config().name);
  // Not written by this process yet: as if written at the last multiple of every_steps before
  // this step (so files land on multiples, and a restored table is not written again at once).
  const int64_t last = found != written_step_.end() ? found->second
                       : step > 0                   ? (step - 1) / every_steps_ * every_steps_
                                                    : 0;
  if (step - last < every_steps_) return;
  try {
    write_locked(shard);
  } catch (const std::exception& error) {
    std::cerr << "gradwire-ps-server: periodic checkpoint of table '" << shard.config().name
              << "' at step " << shard.step()
              << " failed (will retry after the next step): " << error.what() << std::endl;
  }
}

}  // namespace gradwire::ps
