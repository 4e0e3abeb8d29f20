// The collectives `gradwire-bench collectives` measures, one table entry each (nccl-tests
// style): how a requested size becomes buffers, how to fill them with values derived from the
// rank, how to issue the operation, and how to count wrong results.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gradwire/comm/communicator.h"
#include "harness/bandwidth.h"

namespace gradwire::bench {

// One rank's tensors for one size. In-place operations use `input` only.
struct CollectiveBuffers {
  at::Tensor input;
  at::Tensor output;
};

struct CollectiveOp {
  std::string name;    // "allreduce"
  std::string detail;  // "sum", "root 0", "" (printed next to the name)
  Collective kind;     // for bus_bandwidth_factor
  bool in_place;       // works on `input` alone (allreduce, broadcast): may take a shared buffer
  // Elements in each rank's input for a requested size in bytes (nccl-tests' sizes: the buffer
  // for allreduce/broadcast, the whole gathered output for allgather, the whole input for
  // reduce_scatter); at least 1.
  std::int64_t (*input_count)(std::uint64_t bytes, int ranks);
  // The size reported for `input_count` elements (what algbw divides by).
  std::uint64_t (*reported_bytes)(std::int64_t input_count, int ranks);
  CollectiveBuffers (*allocate)(std::int64_t input_count, int ranks);
  // Writes this rank's values (derived from the rank) and poisons what the operation writes.
  void (*fill)(CollectiveBuffers& buffers, int rank);
  WorkHandle (*issue)(Communicator& communicator, CollectiveBuffers& buffers);
  // Elements that differ from the expected result after one fill + issue + wait.
  std::int64_t (*count_wrong)(const CollectiveBuffers& buffers, int rank, int ranks);
};

// allreduce (sum), broadcast (root 0), allgather, reduce_scatter (sum); float32, in the order
// they are run.
const std::vector<CollectiveOp>& collective_ops();

// Pure: the value rank `rank` contributes at element `index` (an exact float32 integer,
// different for each rank so swapped or missing contributions show).
float rank_value(int rank, std::int64_t index);

}  // namespace gradwire::bench
