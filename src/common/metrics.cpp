#include "common/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "gradwire/common/error.h"

namespace gradwire::metrics {
namespace {

bool name_char(char c, bool first, bool colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (colon && c == ':') return true;
  return !first && c >= '0' && c <= '9';
}

bool valid_name(const std::string& name, bool colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!name_char(name[i], i == 0, colon)) return false;
  }
  return true;
}

void add_double(std::atomic<double>& target, double amount) {
  double now = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(now, now + amount, std::memory_order_relaxed)) {
  }
}

std::string labels_text(const Labels& labels) {
  if (labels.empty()) return {};
  std::string text = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) text += ',';
    text += labels[i].first + "=\"" + escape_label_value(labels[i].second) + '"';
  }
  return text + '}';
}

// `labels` with le="bound" appended.
std::string bucket_labels(const Labels& labels, const std::string& bound) {
  Labels with = labels;
  with.emplace_back("le", bound);
  return labels_text(with);
}

const char* type_name(Type type) {
  switch (type) {
    case Type::kCounter:
      return "counter";
    case Type::kGauge:
      return "gauge";
    case Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

Labels zip_labels(const std::vector<std::string>& names, const std::vector<std::string>& values) {
  Labels labels;
  for (size_t i = 0; i < names.size(); ++i) labels.emplace_back(names[i], values[i]);
  return labels;
}

}  // namespace

bool valid_metric_name(const std::string& name) { return valid_name(name, /*colon=*/true); }

bool valid_label_name(const std::string& name) {
  return valid_name(name, /*colon=*/false) && name.rfind("__", 0) != 0;
}

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::trunc(value) && std::fabs(value) < 1e15) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.0f", value);
    return text;
  }
  char text[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

namespace {
// The text format escapes backslash and newline, and in label values the double quote too.
std::string escape(const std::string& value, bool quote) {
  std::string text;
  text.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      text += "\\\\";
    } else if (c == '"' && quote) {
      text += "\\\"";
    } else if (c == '\n') {
      text += "\\n";
    } else {
      text += c;
    }
  }
  return text;
}
}  // namespace

std::string escape_label_value(const std::string& value) { return escape(value, true); }

std::string escape_help(const std::string& help) { return escape(help, false); }

std::string render_text(const std::vector<FamilyValue>& families) {
  std::string text;
  for (const FamilyValue& family : families) {
    text += "# HELP " + family.name + ' ' + escape_help(family.help) + '\n';
    text += "# TYPE " + family.name + ' ' + type_name(family.type) + '\n';
    for (const SeriesValue& series : family.series) {
      if (family.type != Type::kHistogram) {
        text += family.name + labels_text(series.labels) + ' ' + format_value(series.value) + '\n';
        continue;
      }
      for (const auto& [bound, count] : series.buckets) {
        text += family.name + "_bucket" + bucket_labels(series.labels, format_value(bound)) + ' ' +
                format_value(static_cast<double>(count)) + '\n';
      }
      text += family.name + "_bucket" + bucket_labels(series.labels, "+Inf") + ' ' +
              format_value(static_cast<double>(series.count)) + '\n';
      text +=
          family.name + "_sum" + labels_text(series.labels) + ' ' + format_value(series.sum) + '\n';
      text += family.name + "_count" + labels_text(series.labels) + ' ' +
              format_value(static_cast<double>(series.count)) + '\n';
    }
  }
  return text;
}

std::vector<FamilyValue> merge_families(std::vector<FamilyValue> families) {
  std::vector<FamilyValue> merged;
  std::map<std::string, size_t> index;
  for (FamilyValue& family : families) {
    const auto found = index.find(family.name);
    if (found == index.end()) {
      index[family.name] = merged.size();
      merged.push_back(std::move(family));
      continue;
    }
    FamilyValue& into = merged[found->second];
    if (into.type != family.type) {
      throw InvalidArgument("metric " + family.name + " is collected as a " +
                            type_name(family.type) + " and as a " + type_name(into.type));
    }
    for (SeriesValue& series : family.series) into.series.push_back(std::move(series));
  }
  return merged;
}

void add_labels(std::vector<FamilyValue>& families, const Labels& extra) {
  for (FamilyValue& family : families) {
    for (SeriesValue& series : family.series)
      series.labels.insert(series.labels.begin(), extra.begin(), extra.end());
  }
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i]) || (i > 0 && bounds_[i] <= bounds_[i - 1])) {
      throw InvalidArgument("histogram bounds must be finite and strictly ascending");
    }
  }
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(double value) {
  if (!std::isnan(value)) {
    const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
    counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  }
  add_double(sum_, value);
  count_.fetch_add(1, std::memory_order_relaxed);
}

SeriesValue Histogram::value() const {
  SeriesValue value;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    value.buckets.emplace_back(bounds_[i], cumulative);
  }
  value.sum = sum_.load(std::memory_order_relaxed);
  // At least every bucket's count: an observation seen in its bucket is in count too.
  value.count = std::max(cumulative + counts_[bounds_.size()].load(std::memory_order_relaxed),
                         count_.load(std::memory_order_relaxed));
  return value;
}

template <typename T>
T& Family<T>::with(const std::vector<std::string>& values) {
  if (values.size() != label_names_.size()) {
    throw InvalidArgument("metric " + name_ + " takes " + std::to_string(label_names_.size()) +
                          " label value(s), got " + std::to_string(values.size()));
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<T>& series = series_[values];
  if (!series) series = make_();
  return *series;
}

template <typename T>
std::vector<std::pair<Labels, const T*>> Family<T>::series() const {
  std::vector<std::pair<Labels, const T*>> all;
  const std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [values, series] : series_) {
    all.emplace_back(zip_labels(label_names_, values), series.get());
  }
  return all;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

void Registry::declare(const std::string& name, const std::vector<std::string>& label_names) {
  if (!valid_metric_name(name)) throw InvalidArgument("invalid metric name '" + name + "'");
  for (const std::string& label : label_names) {
    if (!valid_label_name(label) || label == "le") {
      throw InvalidArgument("invalid label name '" + label + "' of metric " + name);
    }
  }
  if (std::find(names_.begin(), names_.end(), name) != names_.end()) {
    throw InvalidArgument("metric " + name + " is declared twice");
  }
  names_.push_back(name);
}

Family<Counter>& Registry::counter(const std::string& name, const std::string& help,
                                   std::vector<std::string> label_names) {
  const std::lock_guard<std::mutex> lock(mutex_);
  declare(name, label_names);
  Family<Counter>& family = counters_.emplace_back(name, help, std::move(label_names),
                                                   [] { return std::make_unique<Counter>(); });
  entries_.push_back(
      {Type::kCounter, [&family] {
         FamilyValue value{family.name(), family.help(), Type::kCounter, {}};
         for (const auto& [labels, series] : family.series()) {
           value.series.push_back({labels, static_cast<double>(series->value()), {}, 0, 0});
         }
         return value;
       }});
  return family;
}

Family<Gauge>& Registry::gauge(const std::string& name, const std::string& help,
                               std::vector<std::string> label_names) {
  const std::lock_guard<std::mutex> lock(mutex_);
  declare(name, label_names);
  Family<Gauge>& family = gauges_.emplace_back(name, help, std::move(label_names),
                                               [] { return std::make_unique<Gauge>(); });
  entries_.push_back({Type::kGauge, [&family] {
                        FamilyValue value{family.name(), family.help(), Type::kGauge, {}};
                        for (const auto& [labels, series] : family.series()) {
                          value.series.push_back({labels, series->value(), {}, 0, 0});
                        }
                        return value;
                      }});
  return family;
}

Family<Histogram>& Registry::histogram(const std::string& name, const std::string& help,
                                       std::vector<double> bounds,
                                       std::vector<std::string> label_names) {
  Histogram check(bounds);  // InvalidArgument for bad bounds, before anything is declared
  const std::lock_guard<std::mutex> lock(mutex_);
  declare(name, label_names);
  Family<Histogram>& family = histograms_.emplace_back(
      name, help, std::move(label_names), [bounds] { return std::make_unique<Histogram>(bounds); });
  entries_.push_back({Type::kHistogram, [&family] {
                        FamilyValue value{family.name(), family.help(), Type::kHistogram, {}};
                        for (const auto& [labels, series] : family.series()) {
                          SeriesValue one = series->value();
                          one.labels = labels;
                          value.series.push_back(std::move(one));
                        }
                        return value;
                      }});
  return family;
}

void Registry::add_collector(std::function<std::vector<FamilyValue>()> collector) {
  const std::lock_guard<std::mutex> lock(mutex_);
  collectors_.push_back(std::move(collector));
}

std::vector<FamilyValue> Registry::collect() const {
  std::vector<FamilyValue> families;
  const std::lock_guard<std::mutex> lock(mutex_);
  for (const Entry& entry : entries_) families.push_back(entry.read());
  for (const auto& collector : collectors_) {
    for (FamilyValue& family : collector()) families.push_back(std::move(family));
  }
  return merge_families(std::move(families));
}

}  // namespace gradwire::metrics
