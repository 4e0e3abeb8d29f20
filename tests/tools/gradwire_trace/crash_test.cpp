// A process killed with SIGKILL while recording leaves a timeline file that gradwire-trace merge
// reads: the test runs itself as the child (TimelineCrashChild, which waits to be killed).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "common/timeline_merge.h"
#include "gradwire/common/timeline.h"

namespace gradwire::timeline {
namespace crash_test {

namespace fs = std::filesystem;
using nlohmann::json;

// The child's folder, set by the parent; the child test is skipped without it.
constexpr const char* kChildFolder = "TIMELINE_CRASH_CHILD_FOLDER";
constexpr int kThreads = 2;
constexpr int kEventsPerThread = 1000;
constexpr size_t kEventsPerChunk = 64;
// A "step" span's record with its one arg (timeline_record.h: head, one arg, the name, padded).
constexpr size_t kStepRecordBytes = 72;

// Runs in the child: records, says it is done, and waits to be killed.
TEST(TimelineCrashChild, RecordsUntilKilled) {
  const char* folder = std::getenv(kChildFolder);
  if (folder == nullptr) GTEST_SKIP() << "the child of TimelineCrash.KilledProcessLeavesAFile";
  timeline::StartOptions options;
  options.chunk_bytes = kEventsPerChunk * kStepRecordBytes;
  timeline::start(timeline::process_file(std::string(folder) + "/trace.json", "rank 7"), "rank 7",
                  options);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([] {
      timeline::name_thread("recorder");
      for (int i = 0; i < kEventsPerThread; ++i) timeline::Span span("step", "test", {{"i", i}});
      // The thread lives on: its last, partial chunk is still in its buffer when killed.
      std::this_thread::sleep_for(std::chrono::hours(1));
    });
  }
  // The writer thread writes every full chunk without being asked; wait until it has.
  const std::string file = timeline::current_path();
  const size_t full_chunk_steps = kThreads * (kEventsPerThread / kEventsPerChunk) * kEventsPerChunk;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    std::ifstream in(file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t steps = 0;
    for (size_t at = text.find("step"); at != std::string::npos; at = text.find("step", at + 1)) {
      steps++;
    }
    if (steps >= full_chunk_steps || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::ofstream(std::string(folder) + "/ready") << "ready\n";
  for (std::thread& thread : threads) thread.join();
}

TEST(TimelineCrash, KilledProcessLeavesAFileThatMergeReads) {
  std::string pattern = (fs::temp_directory_path() / "gradwire-crash-XXXXXX").string();
  const std::string folder = ::mkdtemp(pattern.data());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::setenv(kChildFolder, folder.c_str(), 1);
    ::execl("/proc/self/exe", "/proc/self/exe", "--gtest_filter=TimelineCrashChild.*",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(folder + "/ready") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const bool ready = fs::exists(folder + "/ready");
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(ready) << "the child never finished recording";
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  const std::string file = folder + "/trace.json.d/rank-7.gwtl";
  const ProcessTrace process = read_process_trace(file);
  EXPECT_FALSE(process.closed);
  EXPECT_EQ(process.label, "rank 7");
  EXPECT_TRUE(process.has_clock);
  size_t steps = 0;
  for (const json& event : process.events) steps += event.value("name", "") == "step" ? 1 : 0;
  // Every full chunk is in the file; what was left in the buffers is lost.
  const size_t full_chunks = kEventsPerThread / kEventsPerChunk;
  EXPECT_GE(steps, kThreads * full_chunks * kEventsPerChunk);
  EXPECT_LE(steps, size_t{kThreads * kEventsPerThread});

  // The tool itself merges the folder.
  const std::string merged = folder + "/trace.json";
  const std::string command =
      std::string(GRADWIRE_TRACE_PROGRAM) + " merge " + merged + " " + folder + "/trace.json.d";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(merged);
  const json trace = json::parse(in);
  size_t merged_steps = 0;
  for (const json& event : trace["traceEvents"]) {
    merged_steps += event.value("name", "") == "step" ? 1 : 0;
    if (event.value("name", "") == "step") EXPECT_EQ(event["pid"], 1);
  }
  EXPECT_EQ(merged_steps, steps);
  fs::remove_all(folder);
}

}  // namespace crash_test
}  // namespace gradwire::timeline
