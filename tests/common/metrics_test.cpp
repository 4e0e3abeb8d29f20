// The metrics registry and Prometheus's text exposition format 0.0.4 (common/metrics.h): HELP
// and TYPE lines, escaped label values, cumulative histogram buckets ending with +Inf, _sum and
// _count, numbers as Prometheus reads them, families merged by name, invalid names refused.
#include "common/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "gradwire/common/error.h"

namespace gradwire::metrics {
namespace {

TEST(MetricsText, NumbersAsPrometheusReadsThem) {
  EXPECT_EQ(format_value(0), "0");
  EXPECT_EQ(format_value(42), "42");
  EXPECT_EQ(format_value(-3), "-3");
  EXPECT_EQ(format_value(0.25), "0.25");
  EXPECT_EQ(format_value(0.1), "0.1");
  EXPECT_EQ(format_value(1e-05), "1e-05");
  EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(format_value(std::nan("")), "NaN");
  EXPECT_EQ(std::strtod(format_value(1.0 / 3).c_str(), nullptr), 1.0 / 3);
}

TEST(MetricsText, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(escape_help("a\\b\"c\nd"), "a\\\\b\"c\\nd");
}

TEST(MetricsText, RendersCountersGaugesAndHistograms) {
  std::vector<FamilyValue> families;
  families.push_back({"calls_total",
                      "Calls.\nTwo lines",
                      Type::kCounter,
                      {{{{"method", "Batch"}, {"table", "e\"m\\b"}}, 3, {}, 0, 0}}});
  families.push_back({"held_bytes", "Bytes held.", Type::kGauge, {{{}, 1.5, {}, 0, 0}}});
  families.push_back({"wait_seconds",
                      "Waits.",
                      Type::kHistogram,
                      {{{{"table", "emb"}}, 0, {{0.1, 1}, {1, 3}}, 2.75, 4}}});
  families.push_back({"empty_total", "None yet.", Type::kCounter, {}});
  EXPECT_EQ(render_text(families),
            "# HELP calls_total Calls.\\nTwo lines\n"
            "# TYPE calls_total counter\n"
            "calls_total{method=\"Batch\",table=\"e\\\"m\\\\b\"} 3\n"
            "# HELP held_bytes Bytes held.\n"
            "# TYPE held_bytes gauge\n"
            "held_bytes 1.5\n"
            "# HELP wait_seconds Waits.\n"
            "# TYPE wait_seconds histogram\n"
            "wait_seconds_bucket{table=\"emb\",le=\"0.1\"} 1\n"
            "wait_seconds_bucket{table=\"emb\",le=\"1\"} 3\n"
            "wait_seconds_bucket{table=\"emb\",le=\"+Inf\"} 4\n"
            "wait_seconds_sum{table=\"emb\"} 2.75\n"
            "wait_seconds_count{table=\"emb\"} 4\n"
            "# HELP empty_total None yet.\n"
            "# TYPE empty_total counter\n");
}

TEST(MetricsRegistry, HistogramBucketsAreCumulative) {
  Histogram histogram({0.5, 1, 2});
  for (const double value : {0.1, 0.5, 0.7, 3.0, 100.0}) histogram.observe(value);
  const SeriesValue value = histogram.value();
  ASSERT_EQ(value.buckets.size(), 3u);
  EXPECT_EQ(value.buckets[0], (std::pair<double, uint64_t>{0.5, 2}));  // le is inclusive
  EXPECT_EQ(value.buckets[1], (std::pair<double, uint64_t>{1, 3}));
  EXPECT_EQ(value.buckets[2], (std::pair<double, uint64_t>{2, 3}));
  EXPECT_EQ(value.count, 5u);
  EXPECT_DOUBLE_EQ(value.sum, 104.3);
  EXPECT_THROW(Histogram({1, 1}), InvalidArgument);
  EXPECT_THROW(Histogram({std::numeric_limits<double>::infinity()}), InvalidArgument);
}

TEST(MetricsRegistry, SeriesByLabelValuesAndCollectors) {
  Registry registry;
  Family<Counter>& calls = registry.counter("calls_total", "Calls.", {"method", "transport"});
  Family<Gauge>& held = registry.gauge("held_bytes", "Held.");
  registry.histogram("wait_seconds", "Waits.", {1}, {"table"}).with({"emb"}).observe(0.5);
  Counter& batch = calls.with({"Batch", "grpc"});
  batch.add();
  batch.add(2);
  calls.with({"Batch", "channel"}).add();
  EXPECT_EQ(&calls.with({"Batch", "grpc"}), &batch);  // the same series, kept
  held.with({}).set(7);
  EXPECT_THROW(calls.with({"Batch"}), InvalidArgument);
  registry.add_collector([] {
    return std::vector<FamilyValue>{
        {"held_bytes", "Held.", Type::kGauge, {{{{"table", "emb"}}, 9, {}, 0, 0}}},
        {"computed", "Computed.", Type::kGauge, {{{}, 1, {}, 0, 0}}}};
  });
  std::vector<FamilyValue> families = registry.collect();
  ASSERT_EQ(families.size(), 4u);
  EXPECT_EQ(families[0].name, "calls_total");
  ASSERT_EQ(families[0].series.size(), 2u);  // sorted by label values: channel, grpc
  EXPECT_EQ(families[0].series[0].labels, (Labels{{"method", "Batch"}, {"transport", "channel"}}));
  EXPECT_EQ(families[0].series[0].value, 1);
  EXPECT_EQ(families[0].series[1].value, 3);
  EXPECT_EQ(families[1].name, "held_bytes");
  EXPECT_EQ(families[1].series.size(), 2u);  // declared and collected, merged
  EXPECT_EQ(families[2].name, "wait_seconds");
  EXPECT_EQ(families[2].series[0].count, 1u);
  EXPECT_EQ(families[3].name, "computed");

  add_labels(families, {{"server", "127.0.0.1:1"}});
  EXPECT_EQ(families[0].series[0].labels.front(),
            (std::pair<std::string, std::string>{"server", "127.0.0.1:1"}));
}

TEST(MetricsRegistry, RefusesInvalidNamesAndTwins) {
  Registry registry;
  EXPECT_THROW(registry.counter("1calls", "x"), InvalidArgument);
  EXPECT_THROW(registry.counter("calls-total", "x"), InvalidArgument);
  EXPECT_THROW(registry.counter("calls", "x", {"__reserved"}), InvalidArgument);
  EXPECT_THROW(registry.histogram("h", "x", {1}, {"le"}), InvalidArgument);
  registry.counter("ns:calls_total", "x");
  EXPECT_THROW(registry.gauge("ns:calls_total", "x"), InvalidArgument);
  EXPECT_THROW(merge_families({{"a", "", Type::kGauge, {}}, {"a", "", Type::kCounter, {}}}),
               InvalidArgument);
}

TEST(MetricsRegistry, CountsFromManyThreads) {
  Registry registry;
  Counter& counter = registry.counter("c_total", "x").with({});
  Histogram& histogram = registry.histogram("h", "x", {1}).with({});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        counter.add();
        histogram.observe(0.5);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counter.value(), 40000u);
  EXPECT_EQ(histogram.value().count, 40000u);
  EXPECT_DOUBLE_EQ(histogram.value().sum, 20000);
}

}  // namespace
}  // namespace gradwire::metrics
