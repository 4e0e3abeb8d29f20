// Helpers shared by the launch tests: temporary directories, files, bounded waits and a child
// process handle that never outlives its test.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gradwire::launch::testing {

using namespace std::chrono_literals;

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Whole file contents; empty when it cannot be read.
std::string read_file(const std::string& path);
// The lines of `text` without their newlines.
std::vector<std::string> split_lines(const std::string& text);
// Whether `part` occurs in `text`.
bool contains(const std::string& text, const std::string& part);

// Polls `condition` every 10 ms until it holds or `timeout` passes; returns its last value.
bool wait_until(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = 10000ms);

// Reads the pid a worker wrote to `path` (waiting up to 10 s for it to appear); -1 if it never
// did.
pid_t wait_for_pid_file(const std::string& path);

// True when `pid` no longer runs: it does not exist, or is a zombie nobody reaped yet.
bool process_gone(pid_t pid);

// Kills (SIGKILL) each pid that still runs: cleanup so a failing test leaves nothing behind.
void kill_leftovers(const std::vector<pid_t>& pids);

// A worker's shell command printing one line "cpus=ALLOWED bound=B omp=T": its own
// Cpus_allowed_list from /proc (kernel list format, "0-3,6"), GRADWIRE_BOUND_CPUS and
// OMP_NUM_THREADS.
inline constexpr const char* kPrintCpusScript =
    "echo \"cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status) "
    "bound=$GRADWIRE_BOUND_CPUS omp=$OMP_NUM_THREADS\"";

// What one worker printed with kPrintCpusScript.
struct WorkerCpus {
  std::vector<int> allowed;  // parsed from the kernel list format, ascending
  std::string bound;         // GRADWIRE_BOUND_CPUS as printed ("" when unset)
  std::string omp;           // OMP_NUM_THREADS as printed
};

// The kPrintCpusScript lines of `output`, prefixed "[rank N] ", by rank.
std::map<int, WorkerCpus> worker_cpus_by_rank(const std::string& output);

// "0-3,6" -> {0, 1, 2, 3, 6}; throws std::invalid_argument for anything else.
std::vector<int> parse_kernel_cpu_list(const std::string& text);

// A child started with posix_spawn, stdout and stderr redirected to files. Destruction kills it
// with SIGKILL and reaps it if it is still there.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& stdout_path,
        const std::string& stderr_path);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // The raw wait status once the child exited within `timeout`; nullopt otherwise.
  std::optional<int> wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;  // set once reaped
};

}  // namespace gradwire::launch::testing
