// Metrics a process exposes to Prometheus (internal): counters, gauges and histograms kept in a
// Registry, and the pure rendering of their values in Prometheus's text exposition format 0.0.4
// (docs/observability.md). No Prometheus client library: Debian 12 packages none for C++.
//
// Families are declared once (name, help, label names); a series is one family's values for one
// set of label values, created on first use and kept for the registry's life (its address never
// changes, so a caller may keep a reference to it). Recording is lock-free: Counter::add,
// Gauge::set and Histogram::observe are relaxed atomic operations. Finding a series by its label
// values takes the family's mutex (keep the reference of series used on hot paths).
//
// Thread safety: every member may be called from any thread. collect() reads the values while
// they change: each value is read atomically, a histogram's buckets, sum and count one after
// another (a scrape may see an observation in count but not yet in its bucket; Prometheus
// tolerates it). Collectors run on the collecting thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace gradwire::metrics {

enum class Type { kCounter, kGauge, kHistogram };

// Label (name, value) pairs, in the family's order of label names.
using Labels = std::vector<std::pair<std::string, std::string>>;

// One series' values as collected.
struct SeriesValue {
  Labels labels;
  double value = 0;  // counter, gauge
  // Histogram: cumulative counts per upper bound, ascending; the +Inf bucket is `count`.
  std::vector<std::pair<double, uint64_t>> buckets;
  double sum = 0;
  uint64_t count = 0;
};

// One family as collected: what render_text() writes.
struct FamilyValue {
  std::string name;
  std::string help;
  Type type = Type::kCounter;
  std::vector<SeriesValue> series;
};

// Whether `name` is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or label name
// ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__").
bool valid_metric_name(const std::string& name);
bool valid_label_name(const std::string& name);

// A number as the text format writes it: "+Inf", "-Inf", "NaN", integers without a point, else
// the shortest decimal that reads back as the same double ("0.25", "1e-05").
std::string format_value(double value);
// A label value with backslash, double quote and newline escaped (\\, \", \n).
std::string escape_label_value(const std::string& value);
// HELP text with backslash and newline escaped.
std::string escape_help(const std::string& help);

// The text exposition format 0.0.4 of `families`: per family its "# HELP" and "# TYPE" lines,
// then its samples; a histogram as cumulative `_bucket{le="..."}` samples ending with
// le="+Inf", then `_sum` and `_count`. A family without series still gets its HELP and TYPE.
// Families of the same name must have been merged (merge_families).
std::string render_text(const std::vector<FamilyValue>& families);

// Families of the same name joined into one (the first one's help and type, every series in
// order), the families in order of first appearance. InvalidArgument when two of one name
// differ in type.
std::vector<FamilyValue> merge_families(std::vector<FamilyValue> families);

// `extra` labels put before each series' own labels in every family.
void add_labels(std::vector<FamilyValue>& families, const Labels& extra);

class Counter {
 public:
  void add(uint64_t amount = 1) { value_.fetch_add(amount, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `bounds`: the buckets' upper bounds, finite and strictly ascending (InvalidArgument
  // otherwise); +Inf is implied.
  explicit Histogram(std::vector<double> bounds);
  // Counts `value` in the first bucket whose bound is >= value (NaN: only in count and sum).
  void observe(double value);
  // Cumulative counts per bound, the sum and the count.
  SeriesValue value() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket, not cumulative; +Inf last
  std::atomic<double> sum_{0};
  std::atomic<uint64_t> count_{0};
};

// A family of series of type T (Counter, Gauge, Histogram) told apart by label values.
template <typename T>
class Family {
 public:
  using Make = std::function<std::unique_ptr<T>()>;
  Family(std::string name, std::string help, std::vector<std::string> label_names, Make make)
      : name_(std::move(name)),
        help_(std::move(help)),
        label_names_(std::move(label_names)),
        make_(std::move(make)) {}

  // The series of these label values (one per label name, in order), created at first use.
  // InvalidArgument for the wrong number of values.
  T& with(const std::vector<std::string>& values);

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  // Every series by its label values (sorted by them), read now.
  std::vector<std::pair<Labels, const T*>> series() const;

 private:
  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const Make make_;
  mutable std::mutex mutex_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> series_;  // guarded by mutex_
};

// A process part's metrics: its families, and collectors that compute families when collected
// (gauges read from other objects: a table's pending bytes, a checkpoint's age).
class Registry {
 public:
  // Declares a family; InvalidArgument for an invalid or already declared name, or an invalid
  // label name. The family lives as long as the registry.
  Family<Counter>& counter(const std::string& name, const std::string& help,
                           std::vector<std::string> label_names = {});
  Family<Gauge>& gauge(const std::string& name, const std::string& help,
                       std::vector<std::string> label_names = {});
  // `bounds` as for Histogram.
  Family<Histogram>& histogram(const std::string& name, const std::string& help,
                               std::vector<double> bounds,
                               std::vector<std::string> label_names = {});
  // Called by every collect(); it returns families computed then (a family it returns may share
  // the name of a declared one: merged). Must not call this registry's collect().
  void add_collector(std::function<std::vector<FamilyValue>()> collector);

  // Every family's values now, declared ones first (in declaration order), merged by name.
  std::vector<FamilyValue> collect() const;

 private:
  struct Entry {
    Type type;
    std::function<FamilyValue()> read;
  };
  void declare(const std::string& name, const std::vector<std::string>& label_names);

  mutable std::mutex mutex_;  // guards everything below
  std::deque<Family<Counter>> counters_;
  std::deque<Family<Gauge>> gauges_;
  std::deque<Family<Histogram>> histograms_;
  std::vector<Entry> entries_;
  std::vector<std::string> names_;
  std::vector<std::function<std::vector<FamilyValue>()>> collectors_;
};

}  // namespace gradwire::metrics
