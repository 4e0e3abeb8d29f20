#include "host_discovery.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "gradwire/common/env.h"
#include "gradwire/common/error.h"
#include "process.h"

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
  // As a worker is started (its own process group, killed with it if it runs too long).
  SpawnRequest request;
  request.argv = {"/bin/sh", "-c", command};
  request.env = EnvMap::from_process().values();
  ::pthread_sigmask(SIG_SETMASK, nullptr, &request.signal_mask);
  SpawnedWorker script = spawn_worker(request);
  std::string output;
  std::string errors;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::vector<std::pair<int, std::string*>> open = {{script.stdout_read.get(), &output},
                                                    {script.stderr_read.get(), &errors}};
  while (!open.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      script.process.kill_and_reap();
      throw Error("host discovery: '" + command + "' ran longer than " + format_duration(limit));
    }
    std::vector<pollfd> fds;
    for (const auto& [fd, text] : open) fds.push_back({fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), static_cast<int>(left.count())) <= 0) continue;
    for (size_t i = fds.size(); i-- > 0;) {
      if (fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t got = ::read(fds[i].fd, buffer, sizeof(buffer));
      if (got > 0) {
        open[i].second->append(buffer, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));  // end of file
      }
    }
  }
  // Its output is complete; it exits a moment after closing it.
  std::optional<ProcessExit> exit;
  while (!(exit = script.process.try_reap())) {
    if (std::chrono::steady_clock::now() >= deadline) {
      script.process.kill_and_reap();
      throw Error("host discovery: '" + command + "' ran longer than " + format_duration(limit));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (exit->signal != 0 || exit->exit_code != 0) {
    throw Error("host discovery: '" + command + "' " + describe_exit(*exit) +
                (errors.empty() ? "" : ": " + errors.substr(0, errors.find('\n'))));
  }
  return output;
}

}  // namespace gradwire::launch::detail
