// What `gradwire-bench rpc` runs (the parameter servers' per-call floor): its flags, presets and
// the settings they resolve to (pure, unit-tested).
#pragma once

#include <cstdint>
#include <string>

#include "harness/options.h"

namespace gradwire::bench {

// What runs; the defaults are the default preset's (rpc_options() has the others').
struct RpcSettings {
  std::string preset = "default";
  std::int64_t ids = 50;  // ids per lookup and push
  std::int64_t dim = 64;  // floats per row
  int tables = 4;         // tables in the lookups of several tables (tables, tables-each)
  int iters = 2000;       // timed calls of each kind on each side
  int warmup = 200;       // untimed calls of each kind on each side before them
  std::string json_path;
  std::string html_path;
};

// The flags, their help and their defaults in each preset (docs/benchmarks.md):
//   default: 50 ids x dim 64, 4 tables, 200 warm-up + 2000 timed calls per kind and side
//   quick:   the same sizes, 20 warm-up + 100 timed calls
OptionTable<RpcSettings> rpc_options();

// Pure: "preset default: 50 ids x dim 64, 4 tables, 200 warm-up + 2000 timed calls of each kind on
// each side".
std::string describe_rpc_settings(const RpcSettings& settings);

}  // namespace gradwire::bench
