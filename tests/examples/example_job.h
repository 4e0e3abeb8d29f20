// Test support for the examples: runs one as a real job under run_workers (gradwire-run's
// engine) and returns what its processes printed.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>

#include "gradwire/launch/launcher.h"

namespace gradwire::testing {

struct ExampleRun {
  gradwire::launch::LaunchResult result;
  std::string output;  // stdout of every process, prefixed as gradwire-run prints it
};

// Runs `options` (its stdout_fd, forward_signals and threads_per_worker are set here: one
// thread per worker, output into a temporary file) and blocks until the job ended.
inline ExampleRun run_example(gradwire::launch::LaunchOptions options) {
  char path[] = "/tmp/gradwire_example_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  options.stdout_fd = fd;
  options.forward_signals = false;
  options.threads_per_worker = 1;
  ExampleRun run{gradwire::launch::run_workers(options), {}};
  close(fd);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  run.output = text.str();
  std::remove(path);
  return run;
}

// Each match of `line` (a regex whose groups are a rank and a value) in `output`, by rank.
inline std::map<std::string, std::string> values_by_rank(const std::string& output,
                                                         const std::string& line) {
  const std::regex pattern(line);
  std::map<std::string, std::string> values;
  for (std::sregex_iterator it(output.begin(), output.end(), pattern), end; it != end; ++it) {
    values[(*it)[1]] = (*it)[2];
  }
  return values;
}

}  // namespace gradwire::testing
