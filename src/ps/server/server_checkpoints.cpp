#include "ps/server/server_checkpoints.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <regex>
#include <system_error>
#include <tuple>

#include "gradwire/common/error.h"
#include "gradwire/common/timeline.h"

namespace gradwire::ps {
namespace {

// A checkpoint file's name taken apart: its shard and, for generation files, its step.
struct FileName {
  std::string table;
  int server_index = 0;
  int num_servers = 0;
  std::optional<int64_t> step;  // nullopt: a file named without a step
  std::string path;
};

std::optional<FileName> parse_file_name(const std::string& path) {
  static const std::regex pattern(
      R"(^(.+)\.shard(\d{1,9})of(\d{1,9})(?:\.step(\d{1,18}))?\.gwps$)");
  const std::string name = std::filesystem::path(path).filename().string();
  std::smatch match;
  if (!std::regex_match(name, match, pattern)) return std::nullopt;
  FileName parsed;
  parsed.table = match[1].str();
  parsed.server_index = std::stoi(match[2].str());
  parsed.num_servers = std::stoi(match[3].str());
  if (match[4].matched) parsed.step = std::stoll(match[4].str());
  parsed.path = path;
  return parsed;
}

using ShardKey = std::tuple<std::string, int, int>;

// The files of one shard in `dir`, generation files by step.
std::map<int64_t, std::string> generations_of(const std::string& dir, const std::string& table,
                                              int server_index, int num_servers) {
  std::map<int64_t, std::string> steps;
  for (const std::string& path : list_checkpoints(dir)) {
    const std::optional<FileName> name = parse_file_name(path);
    if (name && name->step && name->table == table && name->server_index == server_index &&
        name->num_servers == num_servers) {
      steps[*name->step] = path;
    }
  }
  return steps;
}

void remove_file(const std::string& path) {
  std::error_code error;
  std::filesystem::remove(path, error);
  if (error) {
    std::cerr << "gradwire-ps-server: cannot remove the old checkpoint '" << path
              << "': " << error.message() << std::endl;
  }
}

}  // namespace

std::string generation_file_name(const std::string& table, int server_index, int num_servers,
                                 int64_t step) {
  return table + ".shard" + std::to_string(server_index) + "of" + std::to_string(num_servers) +
         ".step" + std::to_string(step) + ".gwps";
}

ServerCheckpoints::ServerCheckpoints(std::string dir, int64_t every_steps, int keep,
                                     CheckpointObserver observer)
    : dir_(std::move(dir)), every_steps_(every_steps), keep_(keep), observer_(std::move(observer)) {
  if (keep_ < 1) {
    throw ConfigError(
        "gradwire: the parameter server must keep at least 1 checkpoint per table "
        "shard, got " +
        std::to_string(keep_) + " (--checkpoint-keep)");
  }
}

std::vector<ShardSnapshot> ServerCheckpoints::read_all(
    const std::function<void(const ShardSnapshot&)>& check) const {
  // Read and checked: a file whose table this server's limits refuse stops the start naming it
  // (a restored table is never built past them: 2^31 - 1 trainers failed with bad_alloc).
  const auto read_checked = [&](const std::string& path) {
    ShardSnapshot snapshot = read_checkpoint(path);
    if (!check) return snapshot;
    try {
      check(snapshot);
    } catch (const ResourceLimitError& error) {
      throw ConfigError("gradwire: cannot restore the checkpoint '" + path + "': " + error.what() +
                        "; nothing was restored. Start the server with limits that hold the "
                        "table, or move the file out of the checkpoint directory");
    }
    return snapshot;
  };
  std::vector<ShardSnapshot> snapshots;
  if (!enabled()) return snapshots;
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error || !std::filesystem::is_directory(dir_)) {
    throw ConfigError("gradwire: cannot use the checkpoint directory '" + dir_ +
                      "': " + (error ? error.message() : std::string("not a directory")) +
                      ". Pass a writable directory to --checkpoint-dir.");
  }
  // What writers killed in the middle of a write left (the complete files before them are used).
  try {
    for (const std::string& path : remove_stale_checkpoint_temps(dir_)) {
      std::cerr << "gradwire-ps-server: removed '" << path
                << "', left by a checkpoint write that did not finish" << std::endl;
    }
  } catch (const std::exception& error) {
    std::cerr << "gradwire-ps-server: cannot remove what unfinished checkpoint writes left in '"
              << dir_ << "': " << error.what() << std::endl;
  }
  // The newest generation of each shard, and every file named without a step (read to learn it).
  std::map<ShardKey, std::pair<int64_t, std::string>> newest;
  std::vector<std::string> unnamed;
  for (const std::string& path : list_checkpoints(dir_)) {
    const std::optional<FileName> name = parse_file_name(path);
    if (!name || !name->step) {
      unnamed.push_back(path);
      continue;
    }
    const ShardKey key{name->table, name->server_index, name->num_servers};
    const auto found = newest.find(key);
    if (found == newest.end() || found->second.first < *name->step) {
      newest[key] = {*name->step, path};
    }
  }
  std::map<ShardKey, ShardSnapshot> chosen;
  for (const std::string& path : unnamed) {
    ShardSnapshot snapshot = read_checked(path);
    const ShardKey key{snapshot.config.name, snapshot.server_index, snapshot.num_servers};
    const auto named = newest.find(key);
    if (named != newest.end() && named->second.first >= snapshot.step) continue;
    newest.erase(key);
    chosen[key] = std::move(snapshot);
  }
  for (const auto& [key, file] : newest) chosen[key] = read_checked(file.second);
  for (auto& [key, snapshot] : chosen) snapshots.push_back(std::move(snapshot));
  return snapshots;
}

std::shared_ptr<std::mutex> ServerCheckpoints::table_mutex(const std::string& table) {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<std::mutex>& found = table_mutexes_[table];
  if (!found) found = std::make_shared<std::mutex>();
  return found;
}

std::string ServerCheckpoints::write_locked(const TableShard& shard) {
  ShardSnapshot snapshot = shard.snapshot();
  const std::string& table = snapshot.config.name;
  const int index = snapshot.server_index;
  const int count = snapshot.num_servers;
  const std::string path = dir_ + "/" + generation_file_name(table, index, count, snapshot.step);
  const auto start = std::chrono::steady_clock::now();
  timeline::Span span("checkpoint write", "ps",
                      {{"table", table}, {"path", path}, {"step", snapshot.step}});
  try {
    write_checkpoint(path, snapshot);
  } catch (const std::exception& error) {
    if (observer_) observer_(table, std::chrono::steady_clock::now() - start, false);
    span.end();
    timeline::instant("checkpoint write failed", "ps",
                      {{"table", table}, {"path", path}, {"error", error.what()}});
    throw;
  } catch (...) {
    if (observer_) observer_(table, std::chrono::steady_clock::now() - start, false);
    throw;
  }
  if (observer_) observer_(table, std::chrono::steady_clock::now() - start, true);
  if (span.active()) {
    std::error_code size_error;
    const auto bytes = std::filesystem::file_size(path, size_error);
    span.arg({"bytes", size_error ? int64_t{-1} : static_cast<int64_t>(bytes)});
    span.end();
    written_bytes_.fetch_add(size_error ? 0 : static_cast<int64_t>(bytes));
  }
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    written_step_[table] = snapshot.step;
  }
  // The newest keep_ generations stay; a file named without a step is older than any of them.
  std::map<int64_t, std::string> files = generations_of(dir_, table, index, count);
  while (static_cast<int>(files.size()) > keep_) {
    remove_file(files.begin()->second);
    files.erase(files.begin());
  }
  const std::string unnamed = dir_ + "/" + checkpoint_file_name(table, index, count);
  if (std::filesystem::exists(unnamed)) remove_file(unnamed);
  return path;
}

std::vector<std::string> ServerCheckpoints::write_all(
    const std::vector<std::shared_ptr<TableShard>>& shards) {
  GRADWIRE_CHECK(enabled());
  // Each file is a span "checkpoint write" inside this one.
  timeline::Span span("checkpoint", "ps", {{"path", dir_}});
  const int64_t bytes_before = written_bytes_.load();
  std::vector<std::string> paths;
  for (const auto& shard : shards) {
    // A dense shard still awaiting trainer 0's values has nothing worth keeping.
    if (shard->awaiting_values()) continue;
    const std::shared_ptr<std::mutex> table = table_mutex(shard->config().name);
    const std::lock_guard<std::mutex> lock(*table);
    paths.push_back(write_locked(*shard));
  }
  if (span.active()) {
    span.arg({"tables", static_cast<int64_t>(paths.size())});
    // Other threads' periodic writes meanwhile are counted too (rare; the files' spans are exact).
    span.arg({"bytes", written_bytes_.load() - bytes_before});
  }
  return paths;
}

void ServerCheckpoints::after_update(const TableShard& shard) {
  if (!enabled() || every_steps_ <= 0) return;
  const std::shared_ptr<std::mutex> table = table_mutex(shard.config().name);
  const std::lock_guard<std::mutex> table_lock(*table);
  const int64_t step = shard.step();
  int64_t last = 0;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto found = written_step_.find(shard.config().name);
    // Not written by this process yet: as if written at the last multiple of every_steps before
    // this step (so files land on multiples, and a restored table is not written again at once).
    last = found != written_step_.end() ? found->second
           : step > 0                   ? (step - 1) / every_steps_ * every_steps_
                                        : 0;
  }
  if (step - last < every_steps_) return;
  try {
    write_locked(shard);
  } catch (const std::exception& error) {
    std::cerr << "gradwire-ps-server: periodic checkpoint of table '" << shard.config().name
              << "' at step " << step
              << " failed (will retry after the next step): " << error.what() << std::endl;
  }
}

std::optional<ShardSnapshot> ServerCheckpoints::read_step(const std::string& table,
                                                          int server_index, int num_servers,
                                                          int64_t step) const {
  if (!enabled()) return std::nullopt;
  const std::string path =
      dir_ + "/" + generation_file_name(table, server_index, num_servers, step);
  if (std::filesystem::exists(path)) return read_checkpoint(path);
  const std::string unnamed = dir_ + "/" + checkpoint_file_name(table, server_index, num_servers);
  if (std::filesystem::exists(unnamed)) {
    ShardSnapshot snapshot = read_checkpoint(unnamed);
    if (snapshot.step == step) return snapshot;
  }
  return std::nullopt;
}

std::vector<int64_t> ServerCheckpoints::steps_held(const std::string& table, int server_index,
                                                   int num_servers) const {
  std::vector<int64_t> steps;
  if (!enabled()) return steps;
  for (const auto& [step, path] : generations_of(dir_, table, server_index, num_servers)) {
    steps.push_back(step);
  }
  return steps;
}

void ServerCheckpoints::forget_after(const std::string& table, int server_index, int num_servers,
                                     int64_t step) {
  if (!enabled()) return;
  const std::shared_ptr<std::mutex> table_lock = table_mutex(table);
  const std::lock_guard<std::mutex> guard(*table_lock);
  for (const auto& [held, path] : generations_of(dir_, table, server_index, num_servers)) {
    if (held > step) remove_file(path);
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  written_step_[table] = step;
}

}  // namespace gradwire::ps
