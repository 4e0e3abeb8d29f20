// Bandwidth arithmetic as nccl-tests defines it, and the machine's memcpy reference.
//
// Note [Bus bandwidth]: algbw = bytes / time, where `bytes` is the size nccl-tests reports for
// the collective (the buffer for allreduce/broadcast/reduce, the total gathered output for
// allgather, the total input for reduce_scatter). busbw = algbw * factor(n), the factor turning
// algbw into the rate each rank's link has to sustain in an optimal ring/tree algorithm, so that
// busbw is comparable across rank counts and with the hardware's peak:
//   allreduce 2(n-1)/n, reduce_scatter and allgather (n-1)/n, broadcast and reduce 1,
//   alltoall (n-1)/n, sendrecv 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gradwire::bench {

enum class Collective {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kSendRecv
};

// nccl-tests' bus bandwidth factor for `ranks` (>= 1) ranks; throws InvalidArgument otherwise.
double bus_bandwidth_factor(Collective collective, int ranks);

// Bytes per second expressed in GB/s (1e9 bytes/s, as nccl-tests prints); 0 when seconds <= 0.
double gigabytes_per_second(double bytes, double seconds);

// min_bytes, 2*min_bytes, ... up to and including max_bytes (the last power-of-two multiple
// of min_bytes not above it). Throws InvalidArgument when min_bytes is 0 or above max_bytes.
std::vector<std::uint64_t> doubling_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes);

struct MemcpyOptions {
  // Buffer copied each repetition (two such buffers are allocated).
  std::size_t bytes = std::size_t{256} << 20;
  // Timed copies after one untimed copy that faults the pages in; the best one counts.
  int repetitions = 5;
};

// The best single-thread memcpy rate of this machine in GB/s (bytes copied per second; each
// copied byte is read once and written once). Blocks for `repetitions + 1` copies.
double measure_memcpy_bandwidth(const MemcpyOptions& options = {});

}  // namespace gradwire::bench
