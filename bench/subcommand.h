// The table of gradwire-bench subcommands. Each benchmark is one entry: a name, a line of help,
// and `attach`, which declares the subcommand's options on its CLI11 app and returns what to run
// when it is chosen. main.cpp lists the entries; adding a benchmark adds one line there.
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

// The entries, one per benchmark (defined next to each benchmark).
Subcommand collectives_subcommand();
Subcommand ddp_subcommand();  // needs gradwire_ddp and gradwire_models (GRADWIRE_BENCH_WITH_DDP)
Subcommand reducers_subcommand();  // as ddp_subcommand
// DDP + parameter servers; needs gradwire_ps and gradwire-ps-server (GRADWIRE_BENCH_WITH_HYBRID)
Subcommand hybrid_subcommand();
// The RecordIO loader against raw reads; needs gradwire_data (GRADWIRE_BENCH_WITH_DATA)
Subcommand data_subcommand();
Subcommand diff_subcommand();
Subcommand report_subcommand();  // draws result files into an HTML page (bench/report/)

}  // namespace gradwire::bench
