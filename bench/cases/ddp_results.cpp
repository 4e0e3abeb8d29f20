#include "cases/ddp_results.h"

#include <algorithm>
#include <fstream>

#include "gradwire/common/error.h"
#include "harness/alternation.h"
#include "harness/repeats.h"
#include "harness/report.h"
#include "harness/stats.h"
#include "harness/table.h"

namespace gradwire::bench {

namespace {

const nlohmann::json& require(const nlohmann::json& object, const char* key,
                              const std::string& where) {
  return require_field(object, key, where, "DDP");
}

DdpRound parse_round(const nlohmann::json& entry, std::size_t index, const std::string& where) {
  DdpRound round;
  const nlohmann::json& ranks = require(entry, "ranks", where);
  if (ranks.is_array()) {
    for (const auto& rank : ranks) round.ranks.push_back(rank.get<int>());
  } else if (ranks.is_number_integer()) {  // a count instead of a list
    for (int rank = 0; rank < ranks.get<int>(); ++rank) round.ranks.push_back(rank);
  }
  if (round.ranks.empty()) throw InvalidArgument(where + " has no ranks");
  const nlohmann::json& measurements = require(entry, "measurements", where);
  if (!measurements.is_array() || measurements.empty()) {
    throw InvalidArgument(where + " has no measurements");
  }
  for (const auto& seconds : measurements) round.measurements.push_back(seconds.get<double>());
  if (entry.contains("timeline_recorded")) {
    for (const auto& mark : entry.at("timeline_recorded")) {
      round.timeline_recorded.push_back(mark.get<double>());
    }
    if (round.timeline_recorded.size() != round.measurements.size()) {
      throw InvalidArgument(where + " has " + std::to_string(round.timeline_recorded.size()) +
                            " timeline_recorded marks for " +
                            std::to_string(round.measurements.size()) + " measurements");
    }
  }
  // Upstream marks the baseline by position only: the first round of every model.
  round.ddp = entry.contains("ddp") ? entry.at("ddp").get<bool>() : index != 0;
  if (entry.contains("ddp_stats")) round.ddp_stats = entry.at("ddp_stats");
  round.backend = entry.value("backend", std::string());
  round.comm_hook = entry.value("comm_hook", std::string());
  return round;
}

// ddp_stats of `into` (over its iterations) and `next` combined as averages over both.
void pool_stats(nlohmann::json& into, const nlohmann::json& next) {
  if (into.is_null() || next.is_null()) {
    into = next;
    return;
  }
  const double a = into.value("iterations", 0.0);
  const double b = next.value("iterations", 0.0);
  nlohmann::json pooled = next;
  for (const auto& [key, value] : next.items()) {
    const bool average = key.size() > 2 && key.compare(key.size() - 2, 2, "_s") == 0;
    if (!average || !value.is_number() || !into.contains(key) || a + b <= 0) continue;
    pooled[key] = (into.at(key).get<double>() * a + value.get<double>() * b) / (a + b);
  }
  if (next.contains("iterations")) pooled["iterations"] = static_cast<std::int64_t>(a + b);
  into = std::move(pooled);
}

void add_ddp_rows(RowSet& rows, const std::vector<DdpModelResult>& results,
                  const std::string& implementation) {
  for (const auto& result : results) {
    for (const auto& round : result.rounds) {
      Row row;
      row.labels = {{"implementation", implementation},
                    {"model", result.model + ", batch size " + std::to_string(result.batch_size)},
                    {"configuration", round.ddp ? trim_right("ddp " + round.variant()) : "no ddp"}};
      if (round.ddp || round.world_size() > 1) row.labels["ranks"] = round.world_size();
      row.samples = round.measurements;
      rows.rows.push_back(std::move(row));
    }
  }
}

}  // namespace

TrainerResults round_side(const DdpRound& round, std::int64_t batch_size,
                          const std::string& implementation) {
  TrainerResults side{implementation, {}};
  const std::size_t count = round.measurements.size();
  const auto ranks = static_cast<std::size_t>(round.world_size());
  const std::size_t trainers = round.ddp && ranks > 0 && count % ranks == 0 ? ranks : 1;
  const std::size_t each = count / trainers;
  for (std::size_t t = 0; t < trainers; ++t) {
    TrainerSamples trainer;
    trainer.trainer = static_cast<int>(t);
    const auto first = round.measurements.begin() + static_cast<std::ptrdiff_t>(t * each);
    trainer.seconds.assign(first, first + static_cast<std::ptrdiff_t>(each));
    trainer.examples.assign(each, batch_size);
    side.trainers.push_back(std::move(trainer));
  }
  return side;
}

RowSet ddp_rows(const DdpReport& report, const std::string& source) {
  RowSet rows{{"implementation", "model", "configuration", "ranks"}, "s", "ranks", "model", {}};
  add_ddp_rows(rows, report.results, report.implementation);
  const auto reference = report.fields.find("reference");
  if (reference != report.fields.end() && reference->is_object()) {
    const DdpReport theirs = parse_ddp_document(*reference, source + " (embedded reference)");
    const std::string& name = theirs.implementation;
    add_ddp_rows(rows, theirs.results,
                 name == report.implementation ? name + " (reference)" : name);
  }
  return rows;
}

std::vector<DdpModelResult> pool_repeats(const std::vector<std::vector<DdpModelResult>>& repeats) {
  using Models = std::vector<DdpModelResult>;
  return pool_in_order<Models>(repeats, [](Models& pooled, const Models& repeat,
                                           const std::string& where) {
    if (repeat.size() != pooled.size()) {
      throw InvalidArgument(where + " measured " + std::to_string(repeat.size()) +
                            " models, the first " + std::to_string(pooled.size()));
    }
    for (std::size_t m = 0; m < pooled.size(); ++m) {
      DdpModelResult& into = pooled[m];
      const DdpModelResult& next = repeat[m];
      if (next.model != into.model || next.batch_size != into.batch_size ||
          next.rounds.size() != into.rounds.size()) {
        throw InvalidArgument(where + " measured " + next.model + " differently from the first");
      }
      for (std::size_t k = 0; k < into.rounds.size(); ++k) {
        DdpRound& a = into.rounds[k];
        const DdpRound& b = next.rounds[k];
        if (a.ddp != b.ddp || a.ranks != b.ranks || a.variant() != b.variant()) {
          throw InvalidArgument(where + " measured other configurations of " + next.model);
        }
        // Marks only while every repeat has them, in step with the measurements.
        if (a.timeline_recorded.size() + b.timeline_recorded.size() ==
            a.measurements.size() + b.measurements.size()) {
          append(a.timeline_recorded, b.timeline_recorded);
        } else {
          a.timeline_recorded.clear();
        }
        append(a.measurements, b.measurements);
        pool_stats(a.ddp_stats, b.ddp_stats);
      }
    }
  });
}

std::string DdpRound::variant() const {
  if (comm_hook.empty() || comm_hook == "allreduce") return backend;
  return backend.empty() ? comm_hook : backend + "+" + comm_hook;
}

std::string round_label(const DdpRound& round, int ranks_per_node) {
  if (!round.ddp && round.world_size() == 1) return "no ddp";
  const int per_node = std::max(1, std::min(ranks_per_node, round.world_size()));
  const int machines = (round.world_size() + per_node - 1) / per_node;
  const std::string variant = round.ddp ? round.variant() : "no ddp";
  return std::to_string(machines) + "M/" + std::to_string(per_node) + "R" +
         (variant.empty() ? "" : " " + variant);
}

std::vector<double> slowest_rank_measurements(const std::vector<double>& samples, int ranks) {
  if (ranks < 1 || samples.empty() || samples.size() % static_cast<std::size_t>(ranks) != 0) {
    throw InvalidArgument(std::to_string(samples.size()) + " measurements do not divide among " +
                          std::to_string(ranks) + " ranks");
  }
  const std::size_t each = samples.size() / static_cast<std::size_t>(ranks);
  std::vector<double> slowest;
  double slowest_median = 0;
  for (std::size_t begin = 0; begin < samples.size(); begin += each) {
    std::vector<double> mine(samples.begin() + static_cast<std::ptrdiff_t>(begin),
                             samples.begin() + static_cast<std::ptrdiff_t>(begin + each));
    const double median = percentile(mine, 50);
    if (slowest.empty() || median > slowest_median) {
      slowest = std::move(mine);
      slowest_median = median;
    }
  }
  return slowest;
}

nlohmann::json to_json(const std::vector<DdpModelResult>& results, int ranks_per_node) {
  nlohmann::json models = nlohmann::json::array();
  for (const auto& result : results) {
    nlohmann::json rounds = nlohmann::json::array();
    for (const auto& round : result.rounds) {
      nlohmann::json entry = {{"ranks", round.ranks},
                              {"measurements", round.measurements},
                              {"ddp", round.ddp},
                              {"label", round_label(round, ranks_per_node)}};
      if (!round.ddp_stats.is_null()) entry["ddp_stats"] = round.ddp_stats;
      if (!round.backend.empty()) entry["backend"] = round.backend;
      if (!round.comm_hook.empty()) entry["comm_hook"] = round.comm_hook;
      if (!round.timeline_recorded.empty()) {
        entry["timeline_recorded"] = round.timeline_recorded;
        AlternatedSteps steps;
        steps.add(round.measurements, round.timeline_recorded);
        if (steps.comparable()) entry["timeline_alternating"] = steps.to_json("iteration");
      }
      rounds.push_back(std::move(entry));
    }
    models.push_back(
        {{"model", result.model}, {"batch_size", result.batch_size}, {"result", rounds}});
  }
  return models;
}

DdpReport parse_ddp_document(const nlohmann::json& document, const std::string& source) {
  if (!document.is_object()) throw InvalidArgument(source + " is not a JSON object");
  DdpReport report;
  if (document.contains("schema_version")) {
    const auto& version = document.at("schema_version");
    if (!version.is_number_integer() || version.get<int>() != kSchemaVersion) {
      throw InvalidArgument(source + " has schema_version " + version.dump() +
                            " but this gradwire-bench reads version " +
                            std::to_string(kSchemaVersion) + ": use a matching gradwire-bench");
    }
    const std::string benchmark = document.value("benchmark", std::string("?"));
    if (benchmark != "ddp") {
      throw InvalidArgument(source + " holds results of gradwire-bench " + benchmark +
                            ", not ddp: diff compares two ddp results");
    }
    report.implementation = document.value("implementation", std::string("gradwire"));
  } else {
    report.implementation = "pytorch benchmark.py";
  }
  const nlohmann::json& models = require(document, "benchmark_results", source);
  if (!models.is_array()) throw InvalidArgument(source + ": benchmark_results is not a list");
  for (std::size_t m = 0; m < models.size(); ++m) {
    const std::string where = source + " benchmark_results[" + std::to_string(m) + "]";
    DdpModelResult result;
    result.model = require(models[m], "model", where).get<std::string>();
    result.batch_size = require(models[m], "batch_size", where).get<std::int64_t>();
    const nlohmann::json& rounds = require(models[m], "result", where);
    for (std::size_t r = 0; r < rounds.size(); ++r) {
      result.rounds.push_back(
          parse_round(rounds[r], r, where + ".result[" + std::to_string(r) + "]"));
    }
    report.results.push_back(std::move(result));
  }
  for (const auto& [key, value] : document.items()) {
    if (key != "benchmark_results") report.fields[key] = value;
  }
  return report;
}

DdpReport read_ddp_file(const std::string& path) {
  const nlohmann::json document = read_json_document(path);
  try {
    return parse_ddp_document(document, path);
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument(path + " has a field of the wrong type (" + e.what() +
                          "): it is not a DDP benchmark result");
  }
}

}  // namespace gradwire::bench
