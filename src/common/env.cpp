#include "gradwire/common/env.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "gradwire/common/error.h"

extern char** environ;

namespace gradwire {

EnvMap EnvMap::from_process() {
  std::map<std::string, std::string> values;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string text(*entry);
    auto eq = text.find('=');
    if (eq == std::string::npos) continue;
    values.emplace(text.substr(0, eq), text.substr(eq + 1));
  }
  return EnvMap(std::move(values));
}

std::optional<std::string> EnvMap::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::optional<long> EnvMap::get_int(const std::string& name) const {
  auto text = get(name);
  if (!text) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text->c_str(), &end, 10);
  if (text->empty() || errno != 0 || end == nullptr || *end != '\0') {
    throw ConfigError("environment variable " + name + "='" + *text + "' is not a whole number");
  }
  return value;
}

std::optional<double> EnvMap::get_double(const std::string& name) const {
  auto text = get(name);
  if (!text) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text->c_str(), &end);
  if (text->empty() || errno != 0 || end == nullptr || *end != '\0') {
    throw ConfigError("environment variable " + name + "='" + *text + "' is not a number");
  }
  return value;
}

std::chrono::milliseconds parse_duration(const std::string& text, const std::string& what) {
  size_t pos = 0;
  while (pos < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.')) {
    ++pos;
  }
  std::string number = text.substr(0, pos);
  std::string unit = text.substr(pos);
  char* end = nullptr;
  double value = number.empty() ? -1 : std::strtod(number.c_str(), &end);
  double scale = -1;
  if (unit.empty() || unit == "s")
    scale = 1000;
  else if (unit == "ms")
    scale = 1;
  else if (unit == "m" || unit == "min")
    scale = 60000;
  if (value < 0 || scale < 0 || end == nullptr || *end != '\0') {
    throw ConfigError(what + "='" + text +
                      "' is not a duration; write seconds (\"30\", \"30s\"), \"500ms\" or \"2m\"");
  }
  return std::chrono::milliseconds(static_cast<long long>(value * scale));
}

}  // namespace gradwire
