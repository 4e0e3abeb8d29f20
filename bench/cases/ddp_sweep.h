// `gradwire-bench ddp`'s sweep (ddp.cpp runs it on every rank): per model a "no ddp" baseline on
// rank 0, then DDP over ranks 0..n-1 for each world size n, backend and comm hook, every member's
// per-iteration times gathered to rank 0, which prints the rows and writes the JSON (and the
// reference's, with --reference pytorch).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "cases/ddp_settings.h"
#include "harness/ranks.h"

namespace gradwire::bench {

// The reference's JSON next to --json: "out.json" -> "out.pytorch.json".
std::string reference_json_path(const std::string& json_path);

// Runs the sweep on this rank (a collective of the ranks' world); returns the exit code.
int run_ddp_sweep(RankContext& context, const DdpSettings& settings, std::vector<std::string> argv,
                  std::optional<std::chrono::milliseconds> timeout);

}  // namespace gradwire::bench
