// How `gradwire-bench collectives` presents its measurements: the text table (rank 0's stdout)
// and the JSON document. Pure formatting; the measuring is in collectives.cpp.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cases/collective_ops.h"
#include "cases/collectives_settings.h"
#include "harness/report.h"
#include "harness/stats.h"
#include "harness/timing.h"

namespace gradwire::bench {

// One size of one collective, over all ranks.
struct CollectiveRow {
  std::uint64_t bytes = 0;  // nccl-tests' size (see CollectiveOp::reported_bytes)
  std::int64_t count = 0;   // elements in each rank's input
  IterationCounts iterations;
  Summary seconds;              // per iteration, the slowest rank's time
  std::vector<double> samples;  // those times, in seconds, in order
  double algbw_gbps = 0;        // bytes / mean time
  double busbw_gbps = 0;        // algbw * bus factor
  std::int64_t wrong = 0;       // wrong elements, summed over ranks
};

struct CollectiveResult {
  std::string op;
  std::string detail;
  double bus_factor = 1;
  std::vector<CollectiveRow> rows;
  std::string backend;          // the communicator's backend(); empty: not said (title omits it)
  bool shared_buffers = false;  // tensors from Communicator::shared_buffer
};

// Pure: a row from the slowest-rank seconds per iteration.
CollectiveRow make_collective_row(std::uint64_t bytes, std::int64_t count,
                                  const IterationCounts& iterations,
                                  const std::vector<double>& seconds, double bus_factor,
                                  std::int64_t wrong);

// The run's header: versions, machine, memcpy reference.
void print_collectives_header(std::ostream& out, const RunMetadata& metadata);
// One collective: its title line and column headers; then a line per row; then its footer.
void print_collective_title(std::ostream& out, const CollectiveResult& result, int ranks);
void print_collective_row(std::ostream& out, const CollectiveRow& row, double memcpy_gbps);
void print_collective_footer(std::ostream& out, const CollectiveResult& result, double memcpy_gbps);

// The whole --json document (schema in docs/benchmarks.md), with the generic rows
// (harness/rows.h): labels op, backend, buffers and bytes; samples in microseconds.
nlohmann::json collectives_document(const RunMetadata& metadata,
                                    const CollectivesSettings& settings,
                                    const std::vector<CollectiveResult>& results);

}  // namespace gradwire::bench
