// Running a short helper program and reading what it printed (nvidia-smi, a Python interpreter
// probe). For long-running workers use gradwire::launch::run_workers instead.
#pragma once

#include <string>
#include <vector>

namespace gradwire::bench {

struct CommandOutput {
  bool started = false;  // false when the program could not be executed (not found...)
  int exit_code = -1;    // the exit status; 128 + signal when killed; -1 when not started
  std::string output;    // everything it wrote to stdout (stderr is discarded)
  bool succeeded() const { return started && exit_code == 0; }
};

// Runs `argv` (argv[0] looked up on PATH) with stdin from /dev/null, waits for it and returns
// its stdout. Blocks until the program exits. Never throws for a missing program: `started` is
// false. Throws InvalidArgument when argv is empty.
CommandOutput run_command(const std::vector<std::string>& argv);

// Whether `path` is non-empty and can be opened for reading.
bool is_readable_file(const std::string& path);
// `text` without leading and trailing spaces, tabs and line ends (a probe's output).
std::string trim_whitespace(const std::string& text);

}  // namespace gradwire::bench
