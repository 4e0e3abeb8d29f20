// `gradwire-bench data`: records/s and MB/s of gradwire's RecordIO loader (ShardedRecordReader)
// over Fashion-MNIST and a generated file set, on 1 and 2 ranks, static and dynamic partitions,
// uncompressed and zstd, each against the raw read of the same files from the page cache
// (docs/benchmarks.md). Needs gradwire_data (GRADWIRE_BENCH_WITH_DATA).
#pragma once

#include "subcommand.h"

namespace gradwire::bench {

Subcommand data_subcommand();

}  // namespace gradwire::bench
