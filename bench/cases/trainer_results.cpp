#include "cases/trainer_results.h"

#include <algorithm>

#include "gradwire/common/error.h"
#include "harness/repeats.h"
#include "harness/report.h"
#include "harness/stats.h"

namespace gradwire::bench {

namespace {

template <typename T>
std::vector<T> number_list(const nlohmann::json& object, const std::string& key,
                           const std::string& where, const StepNames& names) {
  const nlohmann::json& value = require_list(object, key.c_str(), where, names.benchmark);
  std::vector<T> numbers;
  for (const auto& item : value) {
    if (!item.is_number()) {
      throw InvalidArgument(where + ": \"" + key + "\" holds " + item.dump() + ", not a number");
    }
    numbers.push_back(item.get<T>());
  }
  return numbers;
}

// A map of named lists ("phase_seconds", "bytes"), when the trainer entry has one.
std::map<std::string, std::vector<double>> named_lists(const nlohmann::json& trainer,
                                                       const char* key, const std::string& where,
                                                       const StepNames& names) {
  std::map<std::string, std::vector<double>> lists;
  const auto found = trainer.find(key);
  if (found == trainer.end() || !found->is_object()) return lists;
  for (const auto& item : found->items()) {
    lists[item.key()] = number_list<double>(*found, item.key(), where + "." + key, names);
  }
  return lists;
}

// examples_per_STEP: a list, or one number for every step.
std::vector<std::int64_t> examples_of(const nlohmann::json& trainer, const std::string& where,
                                      const StepNames& names, std::size_t steps) {
  const std::string key = names.examples_key();
  const auto found = trainer.find(key);
  if (found != trainer.end() && found->is_number_integer()) {
    return std::vector<std::int64_t>(steps, found->get<std::int64_t>());
  }
  return number_list<std::int64_t>(trainer, key, where, names);
}

nlohmann::json lists_to_json(const std::map<std::string, std::vector<double>>& lists) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [name, values] : lists) object[name] = values;
  return object;
}

}  // namespace

double TrainerSamples::mean_examples() const {
  if (examples.empty()) return 0;
  double sum = 0;
  for (const auto count : examples) sum += static_cast<double>(count);
  return sum / static_cast<double>(examples.size());
}

std::vector<double> pooled_seconds(const TrainerResults& result) {
  std::vector<double> all;
  for (const auto& trainer : result.trainers) append(all, trainer.seconds);
  return all;
}

double total_examples_per_step(const TrainerResults& result) {
  double total = 0;
  for (const auto& trainer : result.trainers) total += trainer.mean_examples();
  return total;
}

double all_p50_examples_per_second(const TrainerResults& result) {
  const std::vector<double> seconds = pooled_seconds(result);
  if (seconds.empty()) return 0;
  const double p50 = percentile(seconds, 50);
  return p50 > 0 ? total_examples_per_step(result) / p50 : 0.0;
}

TrainerResults pool_trainer_repeats(const std::vector<TrainerResults>& repeats) {
  return pool_in_order<TrainerResults>(
      repeats, [](TrainerResults& pooled, const TrainerResults& next, const std::string& where) {
        if (next.trainers.size() != pooled.trainers.size()) {
          throw InvalidArgument(where + " measured " + std::to_string(next.trainers.size()) +
                                " trainers, repeat 1 " + std::to_string(pooled.trainers.size()));
        }
        for (std::size_t t = 0; t < pooled.trainers.size(); ++t) {
          TrainerSamples& into = pooled.trainers[t];
          const TrainerSamples& from = next.trainers[t];
          append(into.seconds, from.seconds);
          append(into.examples, from.examples);
          for (const auto& [phase, seconds] : from.phase_seconds)
            append(into.phase_seconds[phase], seconds);
          for (const auto& [name, bytes] : from.bytes) append(into.bytes[name], bytes);
          append(into.timeline_recorded, from.timeline_recorded);
        }
      });
}

std::vector<double> p50_ratio_by_repeat(const std::vector<TrainerResults>& ours,
                                        const std::vector<TrainerResults>& theirs) {
  std::vector<double> ratios;
  const std::size_t count = std::min(ours.size(), theirs.size());
  for (std::size_t r = 0; r < count; ++r) {
    const double their_rate = all_p50_examples_per_second(theirs[r]);
    if (their_rate > 0) ratios.push_back(all_p50_examples_per_second(ours[r]) / their_rate);
  }
  return ratios;
}

nlohmann::json to_json(const TrainerSamples& trainer, const StepNames& names) {
  nlohmann::json entry = {{"trainer", trainer.trainer},
                          {names.seconds_key(), trainer.seconds},
                          {names.examples_key(), trainer.examples},
                          {"phase_seconds", lists_to_json(trainer.phase_seconds)}};
  if (!trainer.bytes.empty()) entry["bytes"] = lists_to_json(trainer.bytes);
  if (!trainer.timeline_recorded.empty()) entry["timeline_recorded"] = trainer.timeline_recorded;
  return entry;
}

nlohmann::json trainers_to_json(const TrainerResults& result, const StepNames& names) {
  nlohmann::json trainers = nlohmann::json::array();
  for (const auto& trainer : result.trainers) trainers.push_back(to_json(trainer, names));
  return trainers;
}

TrainerResults parse_trainer_results(const nlohmann::json& document, const std::string& source,
                                     const StepNames& names) {
  TrainerResults result;
  const nlohmann::json& implementation =
      require_field(document, "implementation", source, names.benchmark);
  if (!implementation.is_string())
    throw InvalidArgument(source + ": \"implementation\" is no name");
  result.implementation = implementation.get<std::string>();
  const nlohmann::json& trainers = require_list(document, "trainers", source, names.benchmark);
  for (std::size_t i = 0; i < trainers.size(); ++i) {
    const std::string where = source + " trainers[" + std::to_string(i) + "]";
    TrainerSamples trainer;
    const nlohmann::json& rank = require_field(trainers[i], "trainer", where, names.benchmark);
    if (!rank.is_number_integer()) throw InvalidArgument(where + ": \"trainer\" is no integer");
    trainer.trainer = rank.get<int>();
    trainer.seconds = number_list<double>(trainers[i], names.seconds_key(), where, names);
    trainer.examples = examples_of(trainers[i], where, names, trainer.seconds.size());
    if (trainer.examples.size() != trainer.seconds.size()) {
      throw InvalidArgument(where + ": " + std::to_string(trainer.seconds.size()) + " " +
                            names.step + " times but " + std::to_string(trainer.examples.size()) +
                            " example counts");
    }
    trainer.phase_seconds = named_lists(trainers[i], "phase_seconds", where, names);
    trainer.bytes = named_lists(trainers[i], "bytes", where, names);
    if (trainers[i].contains("timeline_recorded")) {
      trainer.timeline_recorded =
          number_list<double>(trainers[i], "timeline_recorded", where, names);
      if (trainer.timeline_recorded.size() != trainer.seconds.size()) {
        throw InvalidArgument(where + ": " + std::to_string(trainer.seconds.size()) + " " +
                              names.step + " times but " +
                              std::to_string(trainer.timeline_recorded.size()) +
                              " timeline_recorded entries");
      }
    }
    result.trainers.push_back(std::move(trainer));
  }
  std::sort(result.trainers.begin(), result.trainers.end(),
            [](const auto& a, const auto& b) { return a.trainer < b.trainer; });
  return result;
}

AlternatedSteps alternated_steps(const TrainerResults& result) {
  AlternatedSteps steps;
  for (const auto& trainer : result.trainers) steps.add(trainer.seconds, trainer.timeline_recorded);
  return steps;
}

std::vector<double> flatten_samples(const TrainerSamples& samples, const SampleRows& layout) {
  const std::size_t steps = samples.seconds.size();
  std::vector<double> flat = samples.seconds;
  for (const auto count : samples.examples) flat.push_back(static_cast<double>(count));
  auto add = [&](const std::map<std::string, std::vector<double>>& lists, const std::string& name) {
    const auto found = lists.find(name);
    if (found == lists.end()) {
      flat.insert(flat.end(), steps, 0.0);
    } else {
      GRADWIRE_CHECK(found->second.size() == steps);
      append(flat, found->second);
    }
  };
  GRADWIRE_CHECK(samples.examples.size() == steps);
  for (const auto& phase : layout.phases) add(samples.phase_seconds, phase);
  for (const auto& name : layout.byte_names) add(samples.bytes, name);
  if (layout.timeline_recorded) {
    if (samples.timeline_recorded.empty()) {
      flat.insert(flat.end(), steps, -1.0);
    } else {
      GRADWIRE_CHECK(samples.timeline_recorded.size() == steps);
      append(flat, samples.timeline_recorded);
    }
  }
  return flat;
}

TrainerResults unflatten_samples(const std::vector<double>& flat, int trainers,
                                 const SampleRows& layout, const std::string& implementation) {
  const std::size_t per_step = static_cast<std::size_t>(trainers) * layout.rows();
  if (trainers < 1 || flat.size() % per_step != 0) {
    throw InvalidArgument(std::to_string(flat.size()) + " gathered values are not " +
                          std::to_string(trainers) + " trainers x " +
                          std::to_string(layout.rows()) + " rows of equal length");
  }
  const std::size_t steps = flat.size() / per_step;
  TrainerResults result;
  result.implementation = implementation;
  auto row = [&](int trainer, std::size_t index) {
    const auto begin =
        flat.begin() + static_cast<std::ptrdiff_t>(
                           (static_cast<std::size_t>(trainer) * layout.rows() + index) * steps);
    return std::vector<double>(begin, begin + static_cast<std::ptrdiff_t>(steps));
  };
  for (int t = 0; t < trainers; ++t) {
    TrainerSamples samples;
    samples.trainer = t;
    samples.seconds = row(t, 0);
    for (const double count : row(t, 1))
      samples.examples.push_back(static_cast<std::int64_t>(count));
    std::size_t index = 2;
    for (const auto& phase : layout.phases) samples.phase_seconds[phase] = row(t, index++);
    for (const auto& name : layout.byte_names) samples.bytes[name] = row(t, index++);
    if (layout.timeline_recorded) samples.timeline_recorded = row(t, index++);
    result.trainers.push_back(std::move(samples));
  }
  return result;
}

}  // namespace gradwire::bench
