#include "host_discovery.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "gradwire/common/error.h"
#include "gradwire/common/files.h"

extern char** environ;

namespace gradwire::launch::detail {

int discovered_slots(const std::string& output, const std::string& host) {
  std::istringstream lines(output);
  int slots = 0;
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    const size_t colon = line.rfind(':');
    const std::string name = colon == std::string::npos ? line : line.substr(0, colon);
    int count = 1;
    if (colon != std::string::npos) {
      const std::string digits = line.substr(colon + 1);
      size_t used = 0;
      try {
        count = std::stoi(digits, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (digits.empty() || used != digits.size() || count < 0) {
        throw InvalidArgument("host discovery: line " + std::to_string(number) + " '" + line +
                              "' is not HOST or HOST:SLOTS (SLOTS a whole number >= 0)");
      }
    }
    if (name.empty()) {
      throw InvalidArgument("host discovery: line " + std::to_string(number) + " '" + line +
                            "' names no host");
    }
    if (name == host) slots += count;
  }
  return slots;
}

std::vector<std::string> local_host_names() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return {name, "localhost", "127.0.0.1"};
}

std::string run_discovery_script(const std::string& command, std::chrono::milliseconds limit) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw Error(std::string("host discovery: pipe: ") + std::strerror(errno));
  }
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  // Its own process group, so that a script that runs too long is killed with its children.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, "/bin/sh", &actions, &attributes,
                                    const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) {
    throw Error("host discovery: cannot run '" + command + "': " + std::strerror(spawned));
  }
  write_end.reset();
  std::string output;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fd{read_end.get(), POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[4096];
    const ssize_t got = ::read(read_end.get(), buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    output.append(buffer, static_cast<size_t>(got));
  }
  if (timed_out) ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    throw Error("host discovery: '" + command + "' ran longer than " + format_duration(limit));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw Error("host discovery: '" + command + "' failed (status " + std::to_string(status) + ")");
  }
  return output;
}

}  // namespace gradwire::launch::detail
