#include "job_timeline.h"

#include <algorithm>
#include <system_error>

#include "common/timeline_merge.h"
#include "gradwire/common/files.h"

namespace gradwire::launch::detail {

namespace fs = std::filesystem;

std::optional<std::string> job_timeline_path(const LaunchOptions& options, const EnvMap& env,
                                             const std::string& cwd) {
  const std::optional<std::string> path = resolve(options, env).timeline;
  if (!path) return std::nullopt;
  const fs::path given(*path);
  return (given.is_absolute() ? given : fs::path(cwd) / given).lexically_normal().string();
}

TimelineFolderState timeline_folder_state(const std::string& folder) {
  TimelineFolderState state;
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    std::error_code entry_error;
    if (!it->is_regular_file(entry_error) || !timeline::is_trace_file_name(it->path().string())) {
      continue;
    }
    const fs::file_time_type written = it->last_write_time(entry_error);
    if (!entry_error) state[it->path().string()] = written;
  }
  return state;
}

std::vector<std::string> files_written_since(const TimelineFolderState& before,
                                             const TimelineFolderState& after) {
  std::vector<std::string> files;
  for (const auto& [file, written] : after) {
    const auto old = before.find(file);
    if (old == before.end() || old->second != written) files.push_back(file);
  }
  return files;  // sorted: the map's order
}

JobTimeline::JobTimeline(std::string path)
    : path_(std::move(path)), before_(timeline_folder_state(path_ + ".d")) {
  // For any program's sake (gradwire's processes create it themselves); a failure shows later.
  std::error_code ignored;
  fs::create_directories(path_ + ".d", ignored);
}

void JobTimeline::merge(int fd, bool quiet_without_files) const {
  auto say = [fd](const std::string& line) {
    const std::string text = "gradwire-run: " + line + "\n";
    write_fully(fd, text.data(), text.size());
  };
  const std::string folder = path_ + ".d";
  const std::vector<std::string> files =
      files_written_since(before_, timeline_folder_state(folder));
  if (files.empty()) {
    if (!quiet_without_files) {
      say("warning: no process wrote a timeline file into " + folder + " (do the workers call " +
          "gradwire::init or timeline::start_from_env?); " + path_ + " not written");
    }
    return;
  }
  try {
    const timeline::MergeReport report = timeline::merge_files(files, path_);
    say("wrote timeline " + path_ + ": " + std::to_string(report.summary.processes) +
        " processes, " + std::to_string(report.summary.events) + " events");
    for (const timeline::IncompleteFile& file : report.incomplete) {
      say("timeline file " + timeline::describe(file));
    }
  } catch (const std::exception& error) {
    say(std::string("warning: could not merge the timeline into ") + path_ + ": " + error.what());
  }
}

}  // namespace gradwire::launch::detail
