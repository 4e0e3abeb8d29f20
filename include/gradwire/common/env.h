// Reading the process environment as a value, so the logic that interprets it stays pure and
// testable (tests pass a map; production code passes EnvMap::from_process()).
#pragma once

#include <chrono>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>

namespace gradwire {

// An immutable snapshot of environment variables.
class EnvMap {
 public:
  EnvMap() = default;
  explicit EnvMap(std::map<std::string, std::string> values) : values_(std::move(values)) {}
  EnvMap(std::initializer_list<std::pair<const std::string, std::string>> values)
      : values_(values) {}

  // Snapshot of this process's environment (reads `environ`).
  static EnvMap from_process();

  // The value, or nullopt when unset. An empty value counts as set.
  std::optional<std::string> get(const std::string& name) const;
  bool has(const std::string& name) const { return values_.count(name) != 0; }

  // Parses NAME as a whole number; nullopt when unset; ConfigError naming NAME when malformed.
  std::optional<long> get_int(const std::string& name) const;
  // Parses NAME as a decimal number ("25", "0.5"); the same rules.
  std::optional<double> get_double(const std::string& name) const;

  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

// Parses a duration such as "30", "30s", "500ms", "2m" (bare numbers are seconds).
// Throws ConfigError naming `what` when malformed.
std::chrono::milliseconds parse_duration(const std::string& text, const std::string& what);

}  // namespace gradwire
