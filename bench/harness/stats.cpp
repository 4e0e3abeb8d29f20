#include "harness/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "gradwire/common/error.h"

namespace gradwire::bench {

namespace {

// Percentile of already sorted, non-empty samples.
double sorted_percentile(const std::vector<double>& sorted, double p) {
  const double position = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  if (below + 1 >= sorted.size()) return sorted.back();
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[below + 1] - sorted[below]);
}

}  // namespace

double percentile(std::vector<double> samples, double p) {
  if (samples.empty()) throw InvalidArgument("percentile of no samples: measure at least once");
  if (!(p >= 0.0 && p <= 100.0)) {
    throw InvalidArgument("percentile " + std::to_string(p) + " is outside [0, 100]");
  }
  std::sort(samples.begin(), samples.end());
  return sorted_percentile(samples, p);
}

Summary summarize(const std::vector<double>& samples) {
  if (samples.empty()) throw InvalidArgument("summary of no samples: measure at least once");
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  Summary summary;
  summary.count = sorted.size();
  summary.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / sorted.size();
  summary.min = sorted.front();
  summary.max = sorted.back();
  summary.p50 = sorted_percentile(sorted, 50);
  summary.p75 = sorted_percentile(sorted, 75);
  summary.p90 = sorted_percentile(sorted, 90);
  summary.p95 = sorted_percentile(sorted, 95);
  summary.p99 = sorted_percentile(sorted, 99);
  return summary;
}

std::vector<RatePercentile> rate_percentiles(const std::vector<double>& seconds, double examples,
                                             const std::vector<int>& percentiles) {
  std::vector<RatePercentile> rows;
  for (const int p : percentiles) {
    const double value = percentile(seconds, p);
    rows.push_back({p, value, value > 0 ? examples / value : 0.0});
  }
  return rows;
}

}  // namespace gradwire::bench
