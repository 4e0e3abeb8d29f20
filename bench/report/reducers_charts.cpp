#include "report/charts.h"

#include <cstddef>
#include <map>

#include "gradwire/common/error.h"
#include "harness/report.h"

namespace gradwire::bench {

namespace {

// The phases charted, in order: the summary's key in each reducer entry and the chart's name.
struct Phase {
  const char* key;
  const char* name;
};
constexpr Phase kPhases[] = {{"forward_ms", "forward"}, {"backward_ms", "backward"}};

const nlohmann::json& require_reducers(const nlohmann::json& object, const char* key,
                              const std::string& where) {
  return require_field(object, key, where, "reducers");
}

double require_number(const nlohmann::json& object, const char* key, const std::string& where) {
  const nlohmann::json& value = require_reducers(object, key, where);
  if (!value.is_number()) {
    throw InvalidArgument(where + ": \"" + key + "\" is " + value.dump() + ", not a number");
  }
  return value.get<double>();
}

// "resnet50, batch size 32, 2 ranks" from the settings present; empty when there are none.
std::string describe_settings(const nlohmann::json& document) {
  const auto settings = document.find("settings");
  if (settings == document.end() || !settings->is_object()) return "";
  std::string text;
  auto append = [&text](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
  const auto model = settings->find("model");
  if (model != settings->end() && model->is_string()) append(model->get<std::string>());
  const auto batch = settings->find("batch_size");
  if (batch != settings->end() && batch->is_number()) append("batch size " + batch->dump());
  const auto world = settings->find("world_size");
  if (world != settings->end() && world->is_number()) append(world->dump() + " ranks");
  return text;
}

ChartSpec empty_chart(const Phase& phase, const std::string& settings, const std::string& source) {
  ChartSpec chart;
  chart.title = std::string(phase.name) + " latency" + (settings.empty() ? "" : ": " + settings);
  chart.subtitle = source + ": reducers";
  chart.x_label = "bucket size (MiB)";
  chart.y_label = std::string(phase.name) + " ms per iteration";
  chart.x_unit = "MiB";
  chart.y_unit = "ms";
  return chart;
}

}  // namespace

std::vector<ChartSpec> reducers_charts(const nlohmann::json& document, const std::string& source) {
  const std::string settings = describe_settings(document);
  std::vector<ChartSpec> charts;
  for (const Phase& phase : kPhases) charts.push_back(empty_chart(phase, settings, source));

  // Per reducer, the index of its p50 series in every chart (the mean series follows it).
  std::map<std::string, std::size_t> first_series;
  const nlohmann::json& results = require_list(document, "results", source, "reducers");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string where = source + " results[" + std::to_string(i) + "]";
    const double bucket_mb = require_number(results[i], "bucket_size_mb", where);
    const nlohmann::json& reducers = require_list(results[i], "reducers", where, "reducers");
    for (std::size_t j = 0; j < reducers.size(); ++j) {
      const std::string entry_where = where + ".reducers[" + std::to_string(j) + "]";
      const nlohmann::json& name_field = require_reducers(reducers[j], "reducer", entry_where);
      if (!name_field.is_string()) throw InvalidArgument(entry_where + ": \"reducer\" is no name");
      const std::string name = name_field.get<std::string>();
      std::string note;
      const auto buckets = reducers[j].find("buckets");
      if (buckets != reducers[j].end() && buckets->is_number()) note = buckets->dump() + " buckets";

      auto known = first_series.find(name);
      if (known == first_series.end()) {
        known = first_series.emplace(name, charts.front().series.size()).first;
        for (auto& chart : charts) {
          chart.series.push_back({name + " p50", name, false, {}});
          chart.series.push_back({name + " mean", name, true, {}});
        }
      }
      for (std::size_t c = 0; c < charts.size(); ++c) {
        const std::string phase_where = entry_where + "." + kPhases[c].key;
        const nlohmann::json& summary = require_reducers(reducers[j], kPhases[c].key, entry_where);
        const double p50 = require_number(summary, "p50", phase_where);
        const double mean = require_number(summary, "mean", phase_where);
        charts[c].series[known->second].points.push_back({bucket_mb, p50, note});
        charts[c].series[known->second + 1].points.push_back({bucket_mb, mean, note});
      }
    }
  }
  for (auto& chart : charts) finish_chart(chart);
  return charts;
}

}  // namespace gradwire::bench
