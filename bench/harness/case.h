// A benchmark case's entry in the subcommand table (subcommand.h), for cases whose flags are
// their option table's Flags plus the rank options (harness/ranks.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/ranks.h"
#include "subcommand.h"

namespace gradwire::bench {

// `declare` adds the case's flags to its command, bound to a CaseFlags<Flags> that `run`
// receives with the whole command line when the subcommand is chosen; run's result is the exit
// code.
template <class Flags>
Subcommand case_subcommand(
    std::string name, std::string description,
    std::function<void(CLI::App& command, CaseFlags<Flags>& state)> declare,
    std::function<int(const CaseFlags<Flags>& state, const std::vector<std::string>& argv)> run) {
  return {std::move(name), std::move(description),
          [declare, run](CLI::App& command) -> SubcommandRun {
            auto state = std::make_shared<CaseFlags<Flags>>();
            declare(command, *state);
            return [state, run](const std::vector<std::string>& argv) { return run(*state, argv); };
          }};
}

}  // namespace gradwire::bench
