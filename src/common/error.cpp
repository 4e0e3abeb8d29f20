#include "gradwire/common/error.h"

#include <cstdio>

namespace gradwire {

std::string format_duration(std::chrono::milliseconds duration) {
  char text[64];
  if (duration.count() < 1000) {
    std::snprintf(text, sizeof(text), "%lld ms", static_cast<long long>(duration.count()));
  } else {
    std::snprintf(text, sizeof(text), "%.2f s", duration.count() / 1000.0);
  }
  return text;
}

namespace detail {
void throw_check_failure(const char* file, int line, const std::string& what) {
  throw InternalError("gradwire internal check failed at " + std::string(file) + ":" +
                      std::to_string(line) + ": " + what +
                      ". This is a gradwire bug; please report it with this message.");
}
}  // namespace detail
}  // namespace gradwire
