#include "harness/python.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "gradwire/common/error.h"
#include "harness/command.h"

namespace gradwire::bench {

std::vector<std::string> python_candidates(const std::string& preferred,
                                           const std::vector<std::string>& environments) {
  if (!preferred.empty()) return {preferred};
  std::vector<std::string> candidates = environments;
  candidates.push_back("python3");
  candidates.push_back("/usr/bin/python3");
  return candidates;
}

std::vector<std::string> environment_pythons() {
  std::vector<std::string> pythons;
  const char* active = std::getenv("VIRTUAL_ENV");
  for (const std::string& python :
       {active ? std::string(active) + "/bin/python" : std::string(),
        std::string(GRADWIRE_BENCH_PROJECT_PYTHON)}) {
    if (!python.empty() && access(python.c_str(), X_OK) == 0 &&
        std::find(pythons.begin(), pythons.end(), python) == pythons.end()) {
      pythons.push_back(python);
    }
  }
  return pythons;
}

PythonSearch find_python_with_torch(const std::string& preferred, const std::string& module) {
  const std::string imports = module.empty() ? "torch" : "torch, " + module;
  PythonSearch search;
  for (const auto& python : python_candidates(preferred, environment_pythons())) {
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

std::optional<ReferenceRunner> find_reference(const ReferenceNeeds& needs, std::string& why_not) {
  const PythonSearch search = find_python_with_torch(needs.python, needs.module);
  if (!search.found) {
    why_not = "no Python interpreter with torch" +
              (needs.module.empty() ? "" : " and " + needs.module) + ": tried " + search.tried +
              "; install python3-torch (scripts/bench does) or pass --python";
    return std::nullopt;
  }
  const std::optional<std::string> script = find_reference_script(needs.script, why_not);
  if (!script) return std::nullopt;
  return ReferenceRunner{*search.found, *script};
}

ReferenceRunner require_reference(const ReferenceNeeds& needs) {
  std::string why_not;
  std::optional<ReferenceRunner> found = find_reference(needs, why_not);
  if (!found) throw ConfigError("--reference pytorch cannot run: " + why_not);
  return *found;
}

}  // namespace gradwire::bench
