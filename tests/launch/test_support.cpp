#include "test_support.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace gradwire::launch::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/gradwire_launch_XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
}

pid_t wait_for_pid_file(const std::string& path) {
  pid_t pid = -1;
  wait_until([&] {
    const std::string text = read_file(path);
    if (text.empty() || text.back() != '\n') return false;  // not completely written yet
    pid = static_cast<pid_t>(std::atol(text.c_str()));
    return pid > 0;
  });
  return pid;
}

bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  // "pid (comm) S ...": the state follows the last ')'.
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return true;
  return stat[paren + 2] == 'Z';
}

void kill_leftovers(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    if (pid > 0 && !process_gone(pid)) ::kill(pid, SIGKILL);
  }
}

std::vector<int> parse_kernel_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream ranges(text);
  std::string range;
  while (std::getline(ranges, range, ',')) {
    std::smatch match;
    if (!std::regex_match(range, match, std::regex(R"((\d+)(?:-(\d+))?)"))) {
      throw std::invalid_argument("not a CPU list: '" + text + "'");
    }
    const int first = std::stoi(match[1]);
    const int last = match[2].matched ? std::stoi(match[2]) : first;
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  return cpus;
}

std::map<int, WorkerCpus> worker_cpus_by_rank(const std::string& output) {
  const std::regex line_format(R"(\[rank (\d+)\] cpus=(\S+) bound=(\S*) omp=(\S*))");
  std::map<int, WorkerCpus> by_rank;
  for (const std::string& line : split_lines(output)) {
    std::smatch match;
    if (!std::regex_match(line, match, line_format)) continue;
    by_rank[std::stoi(match[1])] = WorkerCpus{parse_kernel_cpu_list(match[2]), match[3], match[4]};
  }
  return by_rank;
}

Child::Child(const std::vector<std::string>& argv, const std::string& stdout_path,
             const std::string& stderr_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const int error = ::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) throw std::runtime_error("posix_spawn " + argv[0] + " failed");
}

Child::~Child() {
  if (status_) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

std::optional<int> Child::wait(std::chrono::milliseconds timeout) {
  wait_until(
      [&] {
        int status = 0;
        if (!status_ && ::waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
        return status_.has_value();
      },
      timeout);
  return status_;
}

}  // namespace gradwire::launch::testing
