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

}  // namespace

const OptionTable<DataFlags, DataSettings>& data_options() {
  using Flags = DataFlags;
  using Settings = DataSettings;
  const auto one_of = [](std::vector<std::string> names) {
    return [names](CLI::Option& option) { option.delimiter(',')->check(CLI::IsMember(names)); };
  };
  static const auto table = [&] {
    OptionTable<Flags, Settings> options({"default", "quick"}, "file sizes and epochs preset");
    options
        .option("--data", &Flags::data_dir,
                "read this directory's .gwrio files (as they are) instead of converting "
                "Fashion-MNIST")
        .option("--scratch", &Flags::scratch_dir,
                "write the converted and generated files here and keep them [a temporary "
                "directory, removed]")
        .option("--sets", &Flags::sets, "data sets [fashion-mnist,generated]", one_of(kSets))
        .preset_option<std::string>(
            "--generated-bytes", &Flags::generated_bytes, {"256M", {{"quick", "32M"}}},
            "record payload of the generated set, e.g. 64M",
            [](Settings& s, const std::string& text) { s.generated.bytes = parse_bytes(text); })
        .preset_option<int>("--generated-files", &Flags::generated_files, {8, {{"quick", 4}}},
                            "files of the generated set",
                            [](Settings& s, const int& files) { s.generated.files = files; })
        .preset_option<std::string>("--record-bytes", &Flags::record_bytes, {"4K"},
                                    "mean generated record size",
                                    [](Settings& s, const std::string& text) {
                                      s.generated.mean_record_bytes = parse_bytes(text);
                                    })
        .preset_setting<std::uint64_t>(
            {kMiB},
            [](Settings& s, const std::uint64_t& bytes) { s.generated.chunk_bytes = bytes; })
        .option("--compressions", &Flags::compressions, "file compressions [none,zstd]",
                one_of(kCompressions))
        .option("--rank-counts", &Flags::rank_counts, "rank counts [1,2]",
                [](CLI::Option& option) { option.delimiter(',')->check(CLI::PositiveNumber); })
        .option("--partitions", &Flags::partitions, "loader partitions [static,dynamic]",
                one_of(kPartitions))
        .preset_value("--epochs", &Flags::epochs, &Settings::epochs, {{"quick", 2}},
                      "timed epochs per measurement", positive_number)
        .preset_value("--warmup", &Flags::warmup, &Settings::warmup, {},
                      "untimed epochs before them", non_negative_number)
        .preset_value("--repeat", &Flags::repeat, &Settings::repeat, {}, "sweeps, pooled",
                      positive_number)
        .preset_value("--prefetch", &Flags::prefetch, &Settings::prefetch, {},
                      "loader prefetch_chunks", positive_number)
        .option("--json", &Flags::json_path, "write the results to this JSON file");
    return options;
  }();
  return table;
}

DataSettings resolve_data_settings(const DataFlags& flags, int max_ranks) {
  DataSettings settings = data_options().resolve(flags);

  for (const auto& name : choose(flags.sets, kSets, "data set")) {
    if (name == "fashion-mnist" && flags.data_dir) {
      settings.sets.push_back({"data", DataSource::kDirectory, *flags.data_dir});
    } else if (name == "fashion-mnist") {
      settings.sets.push_back({name, DataSource::kFashionMnist, ""});
    } else {
      settings.sets.push_back({name, DataSource::kGenerated, ""});
    }
  }

  if (settings.generated.files < 1) {  // no CLI check: its --help shows none
    throw InvalidArgument("--generated-files must be at least 1 (got " +
                          std::to_string(settings.generated.files) + ")");
  }
  if (settings.generated.mean_record_bytes < 2) {
    throw InvalidArgument("--record-bytes must be at least 2");
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
