// gradwire-bench: benchmarks of gradwire's communication stack. `gradwire-bench --help` lists the
// subcommands; docs/benchmarks.md describes each one, its columns and its JSON.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "gradwire/common/error.h"
#include "harness/memory.h"
#include "subcommand.h"

int main(int argc, char** argv) {
  gradwire::bench::apply_memory_policy();  // Note [freed memory] in harness/memory.h
  using gradwire::bench::Subcommand;
  using gradwire::bench::SubcommandRun;
  const std::vector<Subcommand> subcommands = gradwire::bench::registered_subcommands();

  CLI::App app{"gradwire-bench: measure gradwire's collectives and training loops"};
  app.require_subcommand(1);
  std::map<const CLI::App*, SubcommandRun> runs;
  for (const auto& subcommand : subcommands) {
    CLI::App* command = app.add_subcommand(subcommand.name, subcommand.description);
    runs[command] = subcommand.attach(*command);
  }
  CLI11_PARSE(app, argc, argv);

  const std::vector<std::string> command_line(argv, argv + argc);
  for (const auto& [command, run] : runs) {
    if (!command->parsed()) continue;
    try {
      return run(command_line);
    } catch (const std::exception& e) {
      std::cerr << "gradwire-bench " << command->get_name() << ": " << e.what() << std::endl;
      return 1;
    }
  }
  return 1;
}
