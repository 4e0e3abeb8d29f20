// The job's timeline (LaunchOptions::timeline): resolution, the variable every process gets, which
// files of the folder are this launch's, and run_workers merging what its workers wrote.
#include "launch/job_timeline.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "gradwire/common/error.h"
#include "gradwire/common/files.h"
#include "gradwire/common/settings.h"
#include "gradwire/launch/launcher.h"
#include "launch/worker_env.h"
#include "test_support.h"

namespace gradwire::launch::detail {
namespace job_timeline_test {

using namespace std::chrono_literals;
using testing::contains;
using testing::read_file;
using testing::TempDir;

constexpr const char* kTimelineVariable = settings::kTimeline.name;

LaunchOptions one_worker() {
  LaunchOptions options;
  options.command = {"train"};
  return options;
}

TEST(JobTimelineTest, TheOptionComesFirstThenExtraEnvThenTheEnvironment) {
  LaunchOptions options = one_worker();
  EXPECT_FALSE(resolve(options, EnvMap{}).timeline);
  EXPECT_EQ(*resolve(options, EnvMap{{kTimelineVariable, "env.json"}}).timeline, "env.json");
  EXPECT_FALSE(resolve(options, EnvMap{{kTimelineVariable, ""}}).timeline);
  options.extra_env[kTimelineVariable] = "extra.json";
  EXPECT_EQ(*resolve(options, EnvMap{{kTimelineVariable, "env.json"}}).timeline, "extra.json");
  options.extra_env.clear();
  options.timeline = "given.json";
  EXPECT_EQ(*resolve(options, EnvMap{{kTimelineVariable, "env.json"}}).timeline, "given.json");
  options.timeline = "";  // empty counts as unset
  EXPECT_EQ(*resolve(options, EnvMap{{kTimelineVariable, "env.json"}}).timeline, "env.json");
}

TEST(JobTimelineTest, ThePathIsMadeAbsolute) {
  LaunchOptions options = one_worker();
  EXPECT_FALSE(job_timeline_path(options, EnvMap{}, "/work"));
  options.timeline = "out/../trace.json";
  EXPECT_EQ(*job_timeline_path(options, EnvMap{}, "/work"), "/work/trace.json");
  options.timeline = "/tmp/t.json";
  EXPECT_EQ(*job_timeline_path(options, EnvMap{}, "/work"), "/tmp/t.json");
}

TEST(JobTimelineTest, WorkersAndServersGetTheVariable) {
  LaunchOptions options = one_worker();
  WorkerEnvContext context;
  context.master_port = 29500;
  context.fresh_job_token = "token";
  EXPECT_EQ(worker_env(options, context, 0).count(kTimelineVariable), 0u);
  context.timeline = "/work/trace.json";
  EXPECT_EQ(worker_env(options, context, 0).at(kTimelineVariable), "/work/trace.json");
  EXPECT_EQ(server_env(options, context).at(kTimelineVariable), "/work/trace.json");
}

TEST(JobTimelineTest, TheOptionAndExtraEnvMustAgree) {
  LaunchOptions options = one_worker();
  options.timeline = "a.json";
  options.extra_env[kTimelineVariable] = "b.json";
  EXPECT_THROW(validate_launch_options(options), InvalidArgument);
  options.extra_env[kTimelineVariable] = "a.json";
  EXPECT_NO_THROW(validate_launch_options(options));
}

TEST(JobTimelineTest, OnlyNewAndRewrittenFilesAreTheLaunchs) {
  using Clock = std::filesystem::file_time_type::clock;
  const auto then = Clock::now() - 1h;
  const TimelineFolderState before = {{"d/rank-0.json", then}, {"d/rank-5.json", then}};
  const TimelineFolderState after = {
      {"d/rank-0.json", then + 1h}, {"d/rank-1.json", then + 1h}, {"d/rank-5.json", then}};
  EXPECT_EQ(files_written_since(before, after),
            (std::vector<std::string>{"d/rank-0.json", "d/rank-1.json"}));
  EXPECT_TRUE(timeline_folder_state("/nonexistent/gradwire.d").empty());
}

// The merged trace's process labels.
std::set<std::string> process_labels(const std::string& path) {
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::set<std::string> labels;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event.value("name", "") == "process_name") labels.insert(event["args"]["name"]);
  }
  return labels;
}

TEST(JobTimelineTest, RunWorkersMergesWhatItsWorkersWrote) {
  TempDir dir;
  const std::string trace = dir.file("trace.json");
  // An earlier run's file, left in the folder: not this launch's.
  std::filesystem::create_directories(trace + ".d");
  std::ofstream(trace + ".d/rank-5.json") << "[]\n";
  const UniqueFd err(::open(dir.file("stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
  LaunchOptions options;
  options.nproc_per_node = 2;
  options.timeline = trace;
  options.stderr_fd = err.get();
  // Each worker writes its file as a process would; rank 1's stays open (killed, say), and
  // rank 1 fails: the trace is merged whatever the outcome. Rank 1 fails once rank 0's file is
  // whole (at most 10 s): the launcher stops rank 0 when rank 1 fails, which on a loaded machine
  // could be before rank 0 wrote anything.
  options.command = {
      "/bin/sh", "-c",
      "f=\"$GRADWIRE_TIMELINE.d/rank-$RANK.json\"; "
      "printf '[{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,"
      "\"args\":{\"name\":\"rank %s\"}}\\n,{\"ph\":\"i\",\"name\":\"restart\",\"cat\":\"launch\","
      "\"pid\":1,\"tid\":1,\"ts\":5,\"s\":\"p\"}\\n' \"$RANK\" > \"$f\"; "
      "if [ \"$RANK\" = 0 ]; then echo ']' >> \"$f\"; exit 0; fi; n=0; "
      "while [ $n -lt 1000 ] && ! grep -qs '^]' \"$GRADWIRE_TIMELINE.d/rank-0.json\"; do "
      "n=$((n + 1)); sleep 0.01; done; exit 3",
      "worker"};
  const LaunchResult result = run_workers(options);
  EXPECT_EQ(result.exit_code(), 3);
  EXPECT_EQ(process_labels(trace), (std::set<std::string>{"rank 0", "rank 1"}));
  const std::string said = read_file(dir.file("stderr"));
  EXPECT_TRUE(contains(said, "gradwire-run: wrote timeline " + trace + ": 2 processes, 2 events"))
      << said;
  EXPECT_TRUE(contains(said, "rank-1.json (rank 1) was not closed")) << said;
}

TEST(JobTimelineTest, NoFilesIsAWarningNotAFailure) {
  TempDir dir;
  const UniqueFd err(::open(dir.file("stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
  LaunchOptions options;
  options.timeline = dir.file("trace.json");
  options.stderr_fd = err.get();
  options.command = {"/bin/true"};
  EXPECT_EQ(run_workers(options).exit_code(), 0);
  EXPECT_TRUE(contains(read_file(dir.file("stderr")), "warning: no process wrote a timeline"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("trace.json")));
}

}  // namespace job_timeline_test
}  // namespace gradwire::launch::detail
