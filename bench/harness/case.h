// A benchmark case's entry in the subcommand table (subcommand.h), for cases whose flags are
// their option table's (harness/options.h) and the rank options (harness/ranks.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/options.h"
#include "harness/ranks.h"
#include "subcommand.h"

namespace gradwire::bench {

// `options` makes the case's option table (one per command line); `rank_flags` adds the rank
// flags it takes (add_rank_options, add_worker_flag...), bound to a RankOptions it may set the
// defaults of first. When the subcommand is chosen, `run` gets both with the whole command line;
// its result is the exit code.
template <class Settings>
Subcommand case_subcommand(
    std::string name, std::string description, std::function<OptionTable<Settings>()> options,
    std::function<void(CLI::App& command, RankOptions& ranks)> rank_flags,
    std::function<int(const OptionTable<Settings>& options, const RankOptions& ranks,
                      const std::vector<std::string>& argv)>
        run) {
  return {std::move(name), std::move(description),
          [options, rank_flags, run](CLI::App& command) -> SubcommandRun {
            const OptionTable<Settings> table = options();  // copies share the given values
            auto ranks = std::make_shared<RankOptions>();
            table.attach(command);
            rank_flags(command, *ranks);
            return [table, ranks, run](const std::vector<std::string>& argv) {
              return run(table, *ranks, argv);
            };
          }};
}

}  // namespace gradwire::bench
