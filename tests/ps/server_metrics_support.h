// Test support for the metrics tests: reading one sample out of a scraped text, and checking a
// text with `promtool check metrics` (Debian's prometheus package) when it is installed.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "../launch/test_support.h"

namespace gradwire::ps::testing {

// The value of the sample written exactly as `series` ("name{labels}", or a bare name) in the
// text format `text`; NaN when there is none.
inline double sample_value(const std::string& text, const std::string& series) {
  const std::string line_start = series + " ";
  size_t at = 0;
  while ((at = text.find(line_start, at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') {
      return std::strtod(text.c_str() + at + line_start.size(), nullptr);
    }
    at += line_start.size();
  }
  return std::nan("");
}

// The path of `program` when the PATH (or /usr/bin) has it, else empty.
inline std::string find_program(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = std::string(path != nullptr ? path : "") + ":/usr/bin:/usr/local/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, end - start) + "/" + program;
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return {};
}

// What `promtool check metrics` says of `text` ("" when it passes), or "skip" without promtool.
inline std::string promtool_problems(const std::string& text, const launch::testing::TempDir& dir) {
  const std::string promtool = find_program("promtool");
  if (promtool.empty()) return "skip";
  const std::string input = dir.file("scraped.txt");
  const std::string output = dir.file("promtool.txt");
  std::ofstream(input) << text;
  const std::string command =
      "'" + promtool + "' check metrics < '" + input + "' > '" + output + "' 2>&1";
  const int status = std::system(command.c_str());
  const std::string said = launch::testing::read_file(output);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return said.empty() ? "promtool exited with status " + std::to_string(status) : said;
}

}  // namespace gradwire::ps::testing
