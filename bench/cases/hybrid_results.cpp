#include "cases/hybrid_results.h"

#include <algorithm>

#include "gradwire/common/error.h"
#include "harness/repeats.h"
#include "harness/report.h"
#include "harness/stats.h"

namespace gradwire::bench {

namespace {

const nlohmann::json& require(const nlohmann::json& object, const char* key,
                              const std::string& where) {
  return require_field(object, key, where, "hybrid");
}

template <typename T>
std::vector<T> number_list(const nlohmann::json& object, const char* key,
                           const std::string& where) {
  const nlohmann::json& value = require_list(object, key, where, "hybrid");
  std::vector<T> numbers;
  for (const auto& item : value) {
    if (!item.is_number()) {
      throw InvalidArgument(where + ": \"" + key + "\" holds " + item.dump() + ", not a number");
    }
    numbers.push_back(item.get<T>());
  }
  return numbers;
}

}  // namespace

const std::vector<std::string>& hybrid_phases() {
  static const std::vector<std::string> kPhases = {"lookup",    "dense_forward", "backward",
                                                   "allreduce", "push",          "step"};
  return kPhases;
}

double HybridTrainerResult::mean_examples() const {
  if (examples_per_epoch.empty()) return 0;
  double sum = 0;
  for (const auto count : examples_per_epoch) sum += static_cast<double>(count);
  return sum / static_cast<double>(examples_per_epoch.size());
}

std::vector<double> pooled_epoch_seconds(const HybridResult& result) {
  std::vector<double> all;
  for (const auto& trainer : result.trainers) {
    all.insert(all.end(), trainer.epoch_seconds.begin(), trainer.epoch_seconds.end());
  }
  return all;
}

double total_examples_per_epoch(const HybridResult& result) {
  double total = 0;
  for (const auto& trainer : result.trainers) total += trainer.mean_examples();
  return total;
}

double all_p50_examples_per_second(const HybridResult& result) {
  const std::vector<double> seconds = pooled_epoch_seconds(result);
  if (seconds.empty()) return 0;
  const double p50 = percentile(seconds, 50);
  return p50 > 0 ? total_examples_per_epoch(result) / p50 : 0.0;
}

HybridResult pool_repeats(const std::vector<HybridResult>& repeats) {
  return pool_in_order<HybridResult>(
      repeats, [](HybridResult& pooled, const HybridResult& next, const std::string& where) {
        if (next.trainers.size() != pooled.trainers.size()) {
          throw InvalidArgument(where + " measured " + std::to_string(next.trainers.size()) +
                                " trainers, repeat 1 " + std::to_string(pooled.trainers.size()));
        }
        for (std::size_t t = 0; t < pooled.trainers.size(); ++t) {
          HybridTrainerResult& into = pooled.trainers[t];
          const HybridTrainerResult& from = next.trainers[t];
          append(into.epoch_seconds, from.epoch_seconds);
          append(into.examples_per_epoch, from.examples_per_epoch);
          for (const auto& [phase, seconds] : from.phase_seconds)
            append(into.phase_seconds[phase], seconds);
        }
      });
}

nlohmann::json to_json(const HybridTrainerResult& trainer) {
  nlohmann::json phases = nlohmann::json::object();
  for (const auto& [phase, seconds] : trainer.phase_seconds) phases[phase] = seconds;
  return {{"trainer", trainer.trainer},
          {"epoch_seconds", trainer.epoch_seconds},
          {"examples_per_epoch", trainer.examples_per_epoch},
          {"phase_seconds", std::move(phases)}};
}

nlohmann::json trainers_to_json(const HybridResult& result) {
  nlohmann::json trainers = nlohmann::json::array();
  for (const auto& trainer : result.trainers) trainers.push_back(to_json(trainer));
  return trainers;
}

HybridResult parse_hybrid_result(const nlohmann::json& document, const std::string& source) {
  HybridResult result;
  const nlohmann::json& implementation = require(document, "implementation", source);
  if (!implementation.is_string())
    throw InvalidArgument(source + ": \"implementation\" is no name");
  result.implementation = implementation.get<std::string>();
  const nlohmann::json& trainers = require_list(document, "trainers", source, "hybrid");
  for (std::size_t i = 0; i < trainers.size(); ++i) {
    const std::string where = source + " trainers[" + std::to_string(i) + "]";
    HybridTrainerResult trainer;
    const nlohmann::json& rank = require(trainers[i], "trainer", where);
    if (!rank.is_number_integer()) throw InvalidArgument(where + ": \"trainer\" is no integer");
    trainer.trainer = rank.get<int>();
    trainer.epoch_seconds = number_list<double>(trainers[i], "epoch_seconds", where);
    trainer.examples_per_epoch =
        number_list<std::int64_t>(trainers[i], "examples_per_epoch", where);
    if (trainer.examples_per_epoch.size() != trainer.epoch_seconds.size()) {
      throw InvalidArgument(where + ": " + std::to_string(trainer.epoch_seconds.size()) +
                            " epoch times but " +
                            std::to_string(trainer.examples_per_epoch.size()) + " example counts");
    }
    const auto phases = trainers[i].find("phase_seconds");
    if (phases != trainers[i].end() && phases->is_object()) {
      for (const auto& item : phases->items()) {
        trainer.phase_seconds[item.key()] =
            number_list<double>(*phases, item.key().c_str(), where + ".phase_seconds");
      }
    }
    result.trainers.push_back(std::move(trainer));
  }
  std::sort(result.trainers.begin(), result.trainers.end(),
            [](const auto& a, const auto& b) { return a.trainer < b.trainer; });
  return result;
}

}  // namespace gradwire::bench
