// The table of gradwire-bench subcommands. Each benchmark is one entry: a name, a line of help,
// and `attach`, which declares the subcommand's options on its CLI11 app and returns what to run
// when it is chosen. The build registers the entries (registered_subcommands); main.cpp runs them.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gradwire::bench {

// Runs a chosen subcommand. `argv` is the whole command line (program first), so multi-rank
// benchmarks can start copies of themselves with the same arguments. Returns the exit code.
using SubcommandRun = std::function<int(const std::vector<std::string>& argv)>;

struct Subcommand {
  std::string name;
  std::string description;
  // Called once while the command line is being declared; the options it adds must bind to
  // state owned by the returned function (e.g. a shared_ptr both capture).
  std::function<SubcommandRun(CLI::App& command)> attach;
};

// Every subcommand of this build, in --help order: the list bench/CMakeLists.txt generates
// (subcommands.cpp.in) from the cases whose libraries it builds. Each entry is a function
// `Subcommand <name>_subcommand()` defined next to its case.
std::vector<Subcommand> registered_subcommands();

}  // namespace gradwire::bench
