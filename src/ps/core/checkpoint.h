// Checkpoint files of table shards: a fixed binary layout with a JSON header and raw tensor
// bytes, CRC-32 checked, that can hold no code (docs/formats/ps-checkpoint.md).
//
// Thread safety: the functions share no state; two writers of the same path at once race for
// the final rename (the last one wins; neither file is torn). Blocking: file I/O on the calling
// thread.
#pragma once

#include <string>
#include <vector>

#include "ps/core/table_shard.h"

namespace gradwire::ps {

// "emb.shard0of2.gwps": the file name of shard `server_index` of `num_servers` of a table.
std::string checkpoint_file_name(const std::string& table, int server_index, int num_servers);

// Writes `snapshot` to `path` atomically: a temporary file in the same directory is written,
// fsynced and renamed over `path`, then the directory is fsynced. On failure the temporary file
// is removed, an existing file at `path` is untouched, and Error names the path and the cause.
// A writer that dies meanwhile leaves its temporary file ".NAME.tmp-HOST-PID-XXXXXX" behind
// (gradwire/common/files.h); remove_stale_checkpoint_temps() finds it.
void write_checkpoint(const std::string& path, const ShardSnapshot& snapshot);

// Removes the temporary files that checkpoint writers on this host left in `dir` when they died
// before renaming them: files named for a *.gwps target, this host and a process that is gone
// (process_gone). Never a live writer's file, so servers may share the directory; files of other
// hosts and of gradwire versions whose names had no writer in them stay too. Returns the paths
// removed, sorted, for the caller to report; empty when `dir` does not exist. Error when `dir`
// cannot be listed or a file cannot be removed (one that vanished meanwhile is no error).
std::vector<std::string> remove_stale_checkpoint_temps(const std::string& dir);

// Reads and checks a checkpoint. Error naming the file and the byte offset for a bad magic, an
// unknown version, a CRC mismatch, a truncated file, a header that does not parse or sizes that
// disagree (no tensor is allocated beyond what the file's size allows). The snapshot's shapes
// agree with its config; restore it with TableShard::restore().
ShardSnapshot read_checkpoint(const std::string& path);

// The checkpoint files (*.gwps) in `dir`, full paths, sorted. Empty when `dir` does not exist;
// Error when it cannot be read.
std::vector<std::string> list_checkpoints(const std::string& dir);

}  // namespace gradwire::ps
