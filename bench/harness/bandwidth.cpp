#include "harness/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "gradwire/common/error.h"

namespace gradwire::bench {

double bus_bandwidth_factor(Collective collective, int ranks) {
  if (ranks < 1)
    throw InvalidArgument("bus bandwidth needs at least 1 rank, got " + std::to_string(ranks));
  const double n = ranks;
  switch (collective) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return (n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSendRecv:
      return 1.0;
  }
  throw InvalidArgument("unknown collective");
}

double gigabytes_per_second(double bytes, double seconds) {
  return seconds > 0 ? bytes / seconds / 1e9 : 0.0;
}

std::vector<std::uint64_t> doubling_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes) {
  if (min_bytes == 0 || min_bytes > max_bytes) {
    throw InvalidArgument("sizes need 0 < min bytes <= max bytes, got " +
                          std::to_string(min_bytes) + " and " + std::to_string(max_bytes));
  }
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t size = min_bytes; size <= max_bytes; size *= 2) {
    sizes.push_back(size);
    if (size > max_bytes / 2) break;  // the next doubling would pass max_bytes (or overflow)
  }
  return sizes;
}

double measure_memcpy_bandwidth(const MemcpyOptions& options) {
  if (options.bytes == 0 || options.repetitions < 1) {
    throw InvalidArgument("memcpy measurement needs bytes > 0 and repetitions >= 1");
  }
  auto source = std::make_unique<char[]>(options.bytes);
  auto destination = std::make_unique<char[]>(options.bytes);
  std::memset(source.get(), 1, options.bytes);
  std::memcpy(destination.get(), source.get(), options.bytes);  // fault the pages in
  double best_seconds = 0;
  for (int i = 0; i < options.repetitions; ++i) {
    source[static_cast<std::size_t>(i) % options.bytes] = static_cast<char>(i);
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(destination.get(), source.get(), options.bytes);
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    if (i == 0 || elapsed.count() < best_seconds) best_seconds = elapsed.count();
  }
  // Keep the copies observable so they are not optimised away.
  volatile char sink = destination[options.bytes - 1];
  (void)sink;
  return gigabytes_per_second(static_cast<double>(options.bytes), best_seconds);
}

}  // namespace gradwire::bench
