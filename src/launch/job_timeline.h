// The job's merged timeline (LaunchOptions::timeline, docs/timeline.md): every process of the
// launch gets GRADWIRE_TIMELINE=PATH and writes its file into PATH.d/ (timeline::process_file);
// when the job ends the launcher merges the files this launch wrote into PATH.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gradwire/common/env.h"
#include "gradwire/launch/launcher.h"

namespace gradwire::launch::detail {

// The GRADWIRE_TIMELINE every process gets: resolve()'s timeline made absolute against `cwd`
// (the launcher's working directory); nullopt when the launch records none. Pure.
std::optional<std::string> job_timeline_path(const LaunchOptions& options, const EnvMap& env,
                                             const std::string& cwd);

// The *.json files of a folder and when each was last written.
using TimelineFolderState = std::map<std::string, std::filesystem::file_time_type>;

// The *.json files in `folder` now (empty when it does not exist). Never throws.
TimelineFolderState timeline_folder_state(const std::string& folder);

// The files of `after` that are new or rewritten since `before` (sorted): this launch's, not an
// earlier run's left in the folder. Pure.
std::vector<std::string> files_written_since(const TimelineFolderState& before,
                                             const TimelineFolderState& after);

// Merges the job's files into `path` when the job ends, whatever its outcome.
class JobTimeline {
 public:
  // Notes what PATH.d/ holds before the job starts, and creates it (errors ignored: processes
  // that cannot write there say so themselves).
  explicit JobTimeline(std::string path);

  // Merges the files written since construction into the path and writes on `fd` one line
  // "gradwire-run: wrote timeline PATH: N processes, M events", then one line per file that was
  // not whole (a killed process's). Never throws: a failure, or no file at all, is one warning
  // line ("gradwire-run: warning: ..."); with `quiet_without_files` no file says nothing (a
  // launch that failed before starting anything).
  void merge(int fd, bool quiet_without_files = false) const;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  TimelineFolderState before_;
};

}  // namespace gradwire::launch::detail
