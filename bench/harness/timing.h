// How benchmark cases time: the one clock every case measures with (Stopwatch), the loop of one
// call (time_iterations: untimed warm-up iterations, then timed iterations measured one by one),
// and how many of each a message size gets.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

namespace gradwire::bench {

// A monotonic (steady) clock started when constructed. Cases time every measured interval with
// it: a whole step with seconds(), its phases with lap(). Not thread-safe; never throws.
class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()), lap_(start_) {}
  // Seconds since construction.
  double seconds() const { return since(start_); }
  // Seconds since the previous lap (or construction); starts the next lap.
  double lap() {
    const Clock::time_point now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - lap_).count();
    lap_ = now;
    return seconds;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static double since(Clock::time_point from) {
    return std::chrono::duration<double>(Clock::now() - from).count();
  }
  Clock::time_point start_;
  Clock::time_point lap_;
};

// How many iterations a size gets. Small messages run `iters` timed iterations; large ones fewer,
// so that each size moves about `bytes_per_size` bytes, but never fewer than `min_iters`.
// Warm-up shrinks in the same proportion, keeping at least one when `warmup` > 0.
struct IterationPolicy {
  int iters = 50;                                         // timed iterations for small messages
  int warmup = 5;                                         // untimed iterations before them
  int min_iters = 3;                                      // floor for the largest messages
  std::uint64_t bytes_per_size = std::uint64_t{1} << 30;  // 1 GiB of payload per size
  // Warm-up goes on, in doubling batches, until it has taken this long on the slowest rank (when
  // warmup > 0; gradwire-bench collectives), so that small messages are timed in the steady state
  // (threads polling, caches and branch predictors warm), as OSU's benchmarks do with hundreds of
  // warm-up iterations. 0: the counted warm-up only.
  double min_warmup_seconds = 0.0;
};

struct IterationCounts {
  int warmup = 0;
  int timed = 1;
};

// Pure. Throws InvalidArgument when iters < 1, warmup < 0, min_iters < 1 or bytes == 0.
IterationCounts iterations_for_size(const IterationPolicy& policy, std::uint64_t bytes);

// Runs `body` counts.warmup times untimed, then counts.timed times, timing each call alone.
// Returns the seconds of each timed call, in order. Exceptions from body propagate.
std::vector<double> time_iterations(const IterationCounts& counts,
                                    const std::function<void()>& body);

}  // namespace gradwire::bench
