// What `gradwire-bench reducers` runs (the compare_ddp study): its flags, presets and the
// settings they resolve to (pure, unit-tested).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gradwire/ddp/ddp.h"
#include "harness/options.h"

namespace gradwire::bench {

// The flags as given; unset ones come from the preset.
struct ReducersFlags {
  std::string preset = "default";          // "default" or "quick"
  std::string model;                       // a zoo name; empty: the preset's
  std::optional<std::int64_t> batch_size;  // examples per rank and iteration
  std::optional<std::int64_t> image_size;  // height and width of the ResNets' input
  std::string bucket_sizes;                // e.g. "3..27" or "1,5,10..12" (MiB); empty: preset's
  std::vector<std::string> reducers;       // "overlapped", "async", "sync"; empty: all three
  std::optional<int> iterations;           // timed iterations per rank and configuration
  std::optional<int> warmup;               // untimed iterations before them
  std::string json_path;                   // empty: no JSON
  std::string html_path;                   // empty: no page
};

struct ReducersSettings;

// The flags, their help and their defaults in each preset (docs/benchmarks.md):
//   default: compare_ddp.py's: resnet50, batch 32, 224x224, buckets 3..27 MiB,
//            20 warm-up + 100 timed iterations
//   quick:   resnet18, batch 8, 64x64, buckets 1, 5, 25 MiB, 3 warm-up + 20 timed iterations
const OptionTable<ReducersFlags, ReducersSettings>& reducers_options();

// What runs; the defaults are the default preset's (reducers_options() has the others', and
// the bucket sizes').
struct ReducersSettings {
  std::string preset = "default";
  std::string model = "resnet50";
  std::int64_t batch_size = 32;
  std::int64_t image_size = 224;
  std::vector<double> bucket_sizes_mb;  // in the order given, distinct, each > 0
  // The first is the baseline of every delta%.
  std::vector<ddp::ReductionSchedule> reducers;
  int iterations = 100;
  int warmup = 20;
  std::string json_path;
  std::string html_path;
};

// Pure: "3..27" -> 3, 4, ..., 27; "1,2.5,10..12" -> 1, 2.5, 10, 11, 12 (MiB). Throws
// InvalidArgument naming `text` when a number is malformed or not positive, a range runs
// backwards, or a size repeats.
std::vector<double> parse_bucket_sizes(const std::string& text);

// Pure: "overlapped", "async" or "sync" (ddp::to_string's names). Throws InvalidArgument
// listing the names otherwise.
ddp::ReductionSchedule parse_reducer(const std::string& name);

// Pure. Throws InvalidArgument for an unknown preset, model or reducer, a repeated reducer,
// non-positive sizes or iterations, or a negative warm-up.
ReducersSettings resolve_reducers_settings(const ReducersFlags& flags);

// One line for stderr: "model resnet18, batch 8, 64x64, buckets 1,5,25 MiB, ...".
std::string describe_reducers_settings(const ReducersSettings& settings, int ranks,
                                       int threads_per_rank);

}  // namespace gradwire::bench
