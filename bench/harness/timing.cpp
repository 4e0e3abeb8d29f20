#include "harness/timing.h"

#include <algorithm>
#include <string>

#include "gradwire/common/error.h"

namespace gradwire::bench {

IterationCounts iterations_for_size(const IterationPolicy& policy, std::uint64_t bytes) {
  if (policy.iters < 1 || policy.warmup < 0 || policy.min_iters < 1 || bytes == 0) {
    throw InvalidArgument(
        "iteration policy needs iters >= 1, warmup >= 0, min iters >= 1 and "
        "a non-empty message; got iters " +
        std::to_string(policy.iters) + ", warmup " + std::to_string(policy.warmup) +
        ", min iters " + std::to_string(policy.min_iters) + ", bytes " + std::to_string(bytes));
  }
  const std::uint64_t affordable = policy.bytes_per_size / bytes;
  IterationCounts counts;
  counts.timed = static_cast<int>(std::min<std::uint64_t>(policy.iters, affordable));
  counts.timed = std::max(counts.timed, std::min(policy.min_iters, policy.iters));
  // Same proportion for warm-up, rounded up: ceil(warmup * timed / iters).
  counts.warmup = static_cast<int>(
      (static_cast<std::int64_t>(policy.warmup) * counts.timed + policy.iters - 1) / policy.iters);
  return counts;
}

std::vector<double> time_iterations(const IterationCounts& counts,
                                    const std::function<void()>& body) {
  for (int i = 0; i < counts.warmup; ++i) body();
  std::vector<double> seconds;
  seconds.reserve(static_cast<std::size_t>(std::max(counts.timed, 0)));
  for (int i = 0; i < counts.timed; ++i) {
    const Stopwatch clock;
    body();
    seconds.push_back(clock.seconds());
  }
  return seconds;
}

}  // namespace gradwire::bench
