#include "cases/data_bench_settings.h"

#include <algorithm>

#include "gradwire/common/error.h"
#include "harness/table.h"

namespace gradwire::bench {

namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
const std::vector<std::string> kSets = {"fashion-mnist", "generated"};
const std::vector<std::string> kCompressions = {"none", "zstd"};
const std::vector<std::string> kPartitions = {"static", "dynamic"};

struct Preset {
  GeneratedSpec generated;
  int epochs;
  int warmup;
};

Preset preset_named(const std::string& name) {
  if (name == "default") return {{256 * kMiB, 8, 4096, kMiB}, 5, 1};
  if (name == "quick") return {{32 * kMiB, 4, 4096, kMiB}, 2, 1};
  throw InvalidArgument("unknown preset '" + name + "': use default or quick");
}

// `wanted` in the order of `known` (all of `known` when empty); throws naming an unknown one.
std::vector<std::string> choose(const std::vector<std::string>& wanted,
                                const std::vector<std::string>& known, const std::string& what) {
  for (const auto& name : wanted) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string names;
      for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
      throw InvalidArgument("unknown " + what + " '" + name + "': use " + names);
    }
  }
  std::vector<std::string> chosen;
  for (const auto& name : known) {
    if (wanted.empty() || std::find(wanted.begin(), wanted.end(), name) != wanted.end()) {
      chosen.push_back(name);
    }
  }
  return chosen;
}

int positive(int value, const std::string& what) {
  if (value < 1)
    throw InvalidArgument(what + " must be at least 1 (got " + std::to_string(value) + ")");
  return value;
}

}  // namespace

const std::vector<std::string>& data_presets() {
  static const std::vector<std::string> kPresets = {"default", "quick"};
  return kPresets;
}

DataSettings resolve_data_settings(const DataFlags& flags, int max_ranks) {
  const Preset preset = preset_named(flags.preset);
  DataSettings settings;
  settings.preset = flags.preset;

  for (const auto& name : choose(flags.sets, kSets, "data set")) {
    if (name == "fashion-mnist" && flags.data_dir) {
      settings.sets.push_back({"data", DataSource::kDirectory, *flags.data_dir});
    } else if (name == "fashion-mnist") {
      settings.sets.push_back({name, DataSource::kFashionMnist, ""});
    } else {
      settings.sets.push_back({name, DataSource::kGenerated, ""});
    }
  }

  settings.generated = preset.generated;
  if (flags.generated_bytes) settings.generated.bytes = parse_bytes(*flags.generated_bytes);
  if (flags.generated_files) {
    settings.generated.files = positive(*flags.generated_files, "--generated-files");
  }
  if (flags.record_bytes) {
    settings.generated.mean_record_bytes = parse_bytes(*flags.record_bytes);
    if (settings.generated.mean_record_bytes < 2) {
      throw InvalidArgument("--record-bytes must be at least 2");
    }
  }
  if (settings.generated.bytes <
      settings.generated.mean_record_bytes * static_cast<std::uint64_t>(settings.generated.files)) {
    throw InvalidArgument("--generated-bytes " + format_bytes(settings.generated.bytes) +
                          " is less than one record per file: raise it or lower " +
                          "--generated-files / --record-bytes");
  }

  settings.compressions = choose(flags.compressions, kCompressions, "compression");
  settings.partitions = choose(flags.partitions, kPartitions, "partition");

  settings.rank_counts = flags.rank_counts.empty() ? std::vector<int>{1, 2} : flags.rank_counts;
  std::sort(settings.rank_counts.begin(), settings.rank_counts.end());
  settings.rank_counts.erase(std::unique(settings.rank_counts.begin(), settings.rank_counts.end()),
                             settings.rank_counts.end());
  for (const int ranks : settings.rank_counts) {
    if (ranks < 1 || ranks > max_ranks) {
      throw InvalidArgument("rank count " + std::to_string(ranks) + " is outside 1.." +
                            std::to_string(max_ranks));
    }
  }

  settings.epochs = positive(flags.epochs.value_or(preset.epochs), "--epochs");
  settings.warmup = flags.warmup.value_or(preset.warmup);
  if (settings.warmup < 0) throw InvalidArgument("--warmup must not be negative");
  settings.repeat = positive(flags.repeat.value_or(1), "--repeat");
  settings.prefetch = positive(flags.prefetch.value_or(4), "--prefetch");
  return settings;
}

int data_world_size(const DataSettings& settings) {
  return settings.rank_counts.empty() ? 1 : settings.rank_counts.back();
}

std::vector<DataCase> data_cases(const DataSettings& settings) {
  std::vector<DataCase> cases;
  for (const auto& set : settings.sets) {
    const std::vector<std::string> compressions = set.source == DataSource::kDirectory
                                                      ? std::vector<std::string>{"as-is"}
                                                      : settings.compressions;
    for (const auto& compression : compressions) {
      for (const int ranks : settings.rank_counts) {
        cases.push_back({set.name, compression, ranks, "raw"});
        cases.push_back({set.name, compression, ranks, "raw+crc"});
        for (const auto& partition : settings.partitions) {
          cases.push_back({set.name, compression, ranks, partition});
        }
      }
    }
  }
  return cases;
}

}  // namespace gradwire::bench
