#include "cases/reducers_report.h"

#include <sstream>

#include "harness/report.h"
#include "harness/stats.h"
#include "harness/table.h"

namespace gradwire::bench {

namespace {

std::string format_mb(double mb) {
  return mb == static_cast<double>(static_cast<long long>(mb))
             ? std::to_string(static_cast<long long>(mb))
             : format_fixed(mb, 2);
}

std::string format_delta(double percent) {
  return (percent >= 0 ? "+" : "") + format_fixed(percent, 1) + "%";
}

// One compare_ddp table: a row per reducer, mean and percentiles with delta% each.
std::string step_table(const std::string& step, const BucketSizeResult& result, bool forward) {
  Table table({{"DDP: [" + step + "]", 16, Align::kLeft},
               {"mean", 9},
               {"delta%", 7},
               {"p50", 9},
               {"delta%", 7},
               {"p90", 9},
               {"delta%", 7},
               {"p95", 9},
               {"delta%", 7},
               {"p99", 9},
               {"delta%", 7}});
  auto samples = [forward](const ReducerMeasurement& m) {
    return forward ? m.forward_ms : m.backward_ms;
  };
  const Summary base = summarize(samples(result.reducers.front()));
  std::ostringstream out;
  out << table.header() << '\n' << table.rule() << '\n';
  for (const auto& measurement : result.reducers) {
    const Summary s = summarize(samples(measurement));
    std::vector<std::string> cells = {ddp::to_string(measurement.reducer)};
    const std::pair<double, double> columns[] = {{base.mean, s.mean},
                                                 {base.p50, s.p50},
                                                 {base.p90, s.p90},
                                                 {base.p95, s.p95},
                                                 {base.p99, s.p99}};
    for (const auto& [baseline, value] : columns) {
      cells.push_back(format_fixed(value, 2));
      cells.push_back(format_delta(latency_change_percent(baseline, value)));
    }
    out << table.row(cells) << '\n';
  }
  return out.str();
}

}  // namespace

double latency_change_percent(double baseline, double value) {
  return baseline == 0 ? 0 : 100.0 * (value - baseline) / baseline;
}

std::string reducers_summary(const BucketSizeResult& result) {
  std::ostringstream out;
  out << "=== Summary for bucket size: " << format_mb(result.bucket_size_mb) << " MiB ("
      << result.reducers.front().buckets << " buckets), latency in ms ===\n\n"
      << step_table("forward", result, true) << '\n'
      << step_table("backward", result, false);
  return out.str();
}

std::string reducers_overview(const std::vector<BucketSizeResult>& results) {
  if (results.empty()) return "";
  std::vector<Column> columns = {{"bucket MiB", 10}, {"buckets", 7}};
  const auto& reducers = results.front().reducers;
  for (const auto& m : reducers) columns.push_back({ddp::to_string(m.reducer), 11});
  for (std::size_t i = 1; i < reducers.size(); ++i) columns.push_back({"delta%", 7});
  Table table(columns);
  std::ostringstream out;
  out << "=== Backward mean (ms) by bucket size; delta% against "
      << ddp::to_string(reducers.front().reducer) << " ===\n\n"
      << table.header() << '\n'
      << table.rule() << '\n';
  for (const auto& result : results) {
    std::vector<std::string> cells = {format_mb(result.bucket_size_mb),
                                      std::to_string(result.reducers.front().buckets)};
    std::vector<double> means;
    for (const auto& m : result.reducers) means.push_back(summarize(m.backward_ms).mean);
    for (double mean : means) cells.push_back(format_fixed(mean, 2));
    for (std::size_t i = 1; i < means.size(); ++i) {
      cells.push_back(format_delta(latency_change_percent(means.front(), means[i])));
    }
    out << table.row(cells) << '\n';
  }
  return out.str();
}

nlohmann::json reducers_results_json(const std::vector<BucketSizeResult>& results) {
  nlohmann::json array = nlohmann::json::array();
  for (const auto& result : results) {
    nlohmann::json reducers = nlohmann::json::array();
    for (const auto& m : result.reducers) {
      reducers.push_back({{"reducer", ddp::to_string(m.reducer)},
                          {"buckets", m.buckets},
                          {"forward_ms", to_json(summarize(m.forward_ms))},
                          {"backward_ms", to_json(summarize(m.backward_ms))},
                          {"forward_samples_ms", m.forward_ms},
                          {"backward_samples_ms", m.backward_ms}});
    }
    array.push_back({{"bucket_size_mb", result.bucket_size_mb}, {"reducers", reducers}});
  }
  return array;
}

RowSet reducers_rows(const std::vector<BucketSizeResult>& results) {
  RowSet rows{{"phase", "reducer", "bucket_size_mb"}, "ms", "bucket_size_mb", "phase", {}};
  for (const char* phase : {"forward", "backward"}) {
    for (const auto& result : results) {
      for (const auto& m : result.reducers) {
        rows.rows.push_back({{{"phase", phase},
                              {"reducer", ddp::to_string(m.reducer)},
                              {"bucket_size_mb", result.bucket_size_mb}},
                             phase[0] == 'f' ? m.forward_ms : m.backward_ms});
      }
    }
  }
  return rows;
}

}  // namespace gradwire::bench
