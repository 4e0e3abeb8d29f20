#include "harness/python.h"

#include <filesystem>

#include "harness/command.h"

namespace gradwire::bench {

std::vector<std::string> python_candidates(const std::string& preferred) {
  if (!preferred.empty()) return {preferred};
  return {"python3", "/usr/bin/python3"};
}

PythonSearch find_python_with_torch(const std::string& preferred, const std::string& module) {
  const std::string imports = module.empty() ? "torch" : "torch, " + module;
  PythonSearch search;
  for (const auto& python : python_candidates(preferred)) {
    const CommandOutput probe = run_command(
        {python, "-c", "import sys, " + imports + "; sys.stdout.write(torch.__version__)"});
    if (probe.succeeded()) {
      search.found = PythonTorch{python, trim_whitespace(probe.output)};
      return search;
    }
    search.tried += (search.tried.empty() ? "" : ", ") + python +
                    (probe.started ? " (cannot import " + (module.empty() ? "torch" : module) + ")"
                                   : " (not found)");
  }
  return search;
}

std::optional<std::string> find_reference_script(const ScriptPlaces& places, std::string& why_not) {
  if (!places.preferred.empty()) {
    if (is_readable_file(places.preferred)) return places.preferred;
    why_not = "reference script " + places.preferred + " cannot be read";
    return std::nullopt;
  }
  for (const auto& candidate : {places.source, places.installed}) {
    if (is_readable_file(candidate)) return candidate;
  }
  why_not = std::filesystem::path(places.source).filename().string() + " is neither at " +
            places.source + " nor at " + places.installed + ": pass --reference-script";
  return std::nullopt;
}

}  // namespace gradwire::bench
