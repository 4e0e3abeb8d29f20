// Summary statistics of benchmark samples (pure functions).
//
// Percentiles use linear interpolation between closest ranks (the "R-7" definition, numpy's and
// Excel PERCENTILE.INC's default): for sorted samples x[0..n-1] and quantile q in [0, 1], the
// position is h = q * (n - 1); the result is x[floor(h)] + (h - floor(h)) * (x[floor(h)+1] -
// x[floor(h)]). p0 is the minimum, p100 the maximum, and a single sample is every percentile.
#pragma once

#include <cstddef>
#include <vector>

namespace gradwire::bench {

// Percentile `p` (0..100) of `samples` (any order). Throws gradwire::InvalidArgument when
// samples is empty or p is outside [0, 100].
double percentile(std::vector<double> samples, double p);

// What a benchmark row reports about a set of samples (same unit as the samples).
struct Summary {
  std::size_t count = 0;
  double mean = 0;
  double min = 0;
  double max = 0;
  double p50 = 0;
  double p75 = 0;
  double p90 = 0;
  double p95 = 0;
  double p99 = 0;
};

// Summary of `samples`; throws gradwire::InvalidArgument when empty.
Summary summarize(const std::vector<double>& samples);

// One percentile of a row of seconds per unit of work (an iteration, an epoch) and the rate it
// implies: examples_per_second = examples / seconds (0 when seconds is 0).
struct RatePercentile {
  int percentile = 50;
  double seconds = 0;
  double examples_per_second = 0;
};

// Pure: one entry per requested percentile of `seconds`, each doing `examples` examples. Throws
// InvalidArgument when seconds is empty.
std::vector<RatePercentile> rate_percentiles(const std::vector<double>& seconds, double examples,
                                             const std::vector<int>& percentiles);

}  // namespace gradwire::bench
