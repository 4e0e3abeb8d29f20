#include "gradwire/common/settings.h"

#include "gradwire/common/env.h"

namespace gradwire::settings {

std::chrono::milliseconds timeout(const EnvMap& env) {
  if (auto text = env.get(kTimeout.name)) return parse_duration(*text, kTimeout.name);
  return kDefaultTimeout;
}

std::string markdown_table() {
  std::string table =
      "| variable | value | unset | read by | what |\n| --- | --- | --- | --- | --- |\n";
  for (const Setting* setting : kAll) {
    table += std::string("| `") + setting->name + "` | " + setting->kind + " | " +
             setting->default_value + " | " + setting->read_by + " | " + setting->meaning + " |\n";
  }
  return table;
}

}  // namespace gradwire::settings
