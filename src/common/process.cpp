#include "common/process.h"

#include <signal.h>
#include <sys/types.h>

#include <cerrno>
#include <fstream>
#include <string>

namespace gradwire {

bool process_gone(int64_t pid) {
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
  // A zombie still answers kill(); its state letter in /proc/PID/stat is 'Z'.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close_paren = line.rfind(')');
  return close_paren != std::string::npos && close_paren + 2 < line.size() &&
         line[close_paren + 2] == 'Z';
}

}  // namespace gradwire
