// The command-line flags of `gradwire-bench ddp`, declared on a CLI11 command: they fill the
// DdpFlags the settings are resolved from (ddp_settings.h) and the rank options (harness/ranks.h).
#pragma once

#include <CLI/CLI.hpp>

#include "cases/ddp_settings.h"
#include "harness/ranks.h"

namespace gradwire::bench {

// Declares every flag of the subcommand but --worker (add_worker_flag). Sets ranks.bind_cores to
// false: ranks run unbound unless --bind-cores says otherwise.
void add_ddp_flags(CLI::App& command, DdpFlags& flags, RankOptions& ranks);

}  // namespace gradwire::bench
