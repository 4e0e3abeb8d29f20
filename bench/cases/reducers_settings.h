// What `gradwire-bench reducers` runs (the compare_ddp study): its flags, presets and the
// settings they resolve to (pure, unit-tested).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gradwire/ddp/ddp.h"
#include "harness/options.h"

namespace gradwire::bench {

// What runs; the defaults are the default preset's (reducers_options() has the others', and
// the bucket sizes').
struct ReducersSettings {
  std::string preset = "default";
  std::string model = "resnet50";
  std::int64_t batch_size = 32;
  std::int64_t image_size = 224;
  std::vector<double> bucket_sizes_mb;  // in the order given, distinct, each > 0
  // The first is the baseline of every delta% (all three unless --reducers names others).
  std::vector<ddp::ReductionSchedule> reducers;
  int iterations = 100;
  int warmup = 20;
  std::string json_path;
  std::string html_path;
};

// The flags, their help and their defaults in each preset (docs/benchmarks.md):
//   default: compare_ddp.py's: resnet50, batch 32, 224x224, buckets 3..27 MiB,
//            20 warm-up + 100 timed iterations
//   quick:   resnet18, batch 8, 64x64, buckets 1, 5, 25 MiB, 3 warm-up + 20 timed iterations
// Its resolve() throws InvalidArgument for malformed bucket sizes, an unknown model or reducer,
// or a repeated reducer.
OptionTable<ReducersSettings> reducers_options();

// Pure: "3..27" -> 3, 4, ..., 27; "1,2.5,10..12" -> 1, 2.5, 10, 11, 12 (MiB). Throws
// InvalidArgument naming `text` when a number is malformed or not positive, a range runs
// backwards, or a size repeats.
std::vector<double> parse_bucket_sizes(const std::string& text);

// Pure: the --reducers list ("overlapped", "async", "sync": ddp::to_string's names), all three
// when empty. Throws InvalidArgument for a repeated name, or an unknown one listing the names.
std::vector<ddp::ReductionSchedule> parse_reducers(const std::vector<std::string>& names);

// One line for stderr: "model resnet18, batch 8, 64x64, buckets 1,5,25 MiB, ...".
std::string describe_reducers_settings(const ReducersSettings& settings, int ranks,
                                       int threads_per_rank);

}  // namespace gradwire::bench
