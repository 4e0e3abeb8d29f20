// `gradwire-bench diff BASELINE.json TEST.json`: A/B comparison of two results of one benchmark.
// Results of any case but ddp are compared row by row (harness/rows.h, print_rows_diff). DDP
// results are compared as PyTorch's benchmarks/distributed/ddp/diff.py prints them: the files'
// settings side by side, then per model and configuration p75 and p95 sec/iter and ex/sec of both
// and the change delta% = -100 * (test - baseline) / baseline (positive: the test is faster). Reads
// files of gradwire-bench ddp, bench/reference/ddp_reference.py and PyTorch's benchmark.py.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cases/ddp_results.h"
#include "harness/rows.h"

namespace gradwire::bench {

// Pure: a field value as the settings block and the report page print it: strings bare, null as
// "unset" (never a language's null: upstream's diff.py prints Python's "None"), arrays
// space-separated, objects as "{key value, ...}", multi-line text as "(N lines)".
std::string describe_field(const nlohmann::json& value);

// Pure: the whole comparison. Models are matched by name and batch size, configurations by
// "no ddp" or DDP and world size; those present in one file only are named, not compared.
void print_ddp_diff(std::ostream& out, const DdpReport& baseline, const DdpReport& test);

}  // namespace gradwire::bench
