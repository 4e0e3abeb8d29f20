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

}  // namespace

OptionTable<DataSettings> data_options() {
  using Settings = DataSettings;
  OptionTable<Settings> options({"default", "quick"}, "file sizes and epochs preset");
  options
      .option("--data", &Settings::data_dir,
              "read this directory's .gwrio files (as they are) instead of converting "
              "Fashion-MNIST")
      .option("--scratch", &Settings::scratch_dir,
              "write the converted and generated files here and keep them [a temporary "
              "directory, removed]")
      .option<std::vector<std::string>>(
          "--sets", "data sets [fashion-mnist,generated]",
          [](Settings& s, const std::vector<std::string>& names) {
            for (const auto& name : chosen_in_order(names, kSets)) {
              if (name == "fashion-mnist" && s.data_dir) {
                s.sets.push_back({"data", DataSource::kDirectory, *s.data_dir});
              } else {
                s.sets.push_back(
                    {name, name == "generated" ? DataSource::kGenerated : DataSource::kFashionMnist,
                     ""});
              }
            }
          },
          names_from(kSets))
      .preset_option<std::string>(
          "--generated-bytes", {"256M", {{"quick", "32M"}}},
          "record payload of the generated set, e.g. 64M",
          [](Settings& s, const std::string& text) { s.generated.bytes = parse_bytes(text); })
      .preset_option<int>("--generated-files", {8, {{"quick", 4}}}, "files of the generated set",
                          [](Settings& s, const int& files) { s.generated.files = files; })
      .preset_option<std::string>("--record-bytes", {"4K"}, "mean generated record size",
                                  [](Settings& s, const std::string& text) {
                                    s.generated.mean_record_bytes = parse_bytes(text);
                                  })
      .preset_setting<std::uint64_t>(
          {kMiB}, [](Settings& s, const std::uint64_t& bytes) { s.generated.chunk_bytes = bytes; })
      .option<std::vector<std::string>>(
          "--compressions", "file compressions [none,zstd]",
          [](Settings& s, const std::vector<std::string>& names) {
            s.compressions = chosen_in_order(names, kCompressions);
          },
          names_from(kCompressions))
      .option("--rank-counts", &Settings::rank_counts, "rank counts [1,2]",
              [](CLI::Option& option) { option.delimiter(',')->check(CLI::PositiveNumber); })
      .option<std::vector<std::string>>(
          "--partitions", "loader partitions [static,dynamic]",
          [](Settings& s, const std::vector<std::string>& names) {
            s.partitions = chosen_in_order(names, kPartitions);
          },
          names_from(kPartitions))
      .preset_value("--epochs", &Settings::epochs, {{"quick", 2}}, "timed epochs per measurement",
                    positive_number)
      .preset_value("--warmup", &Settings::warmup, {}, "untimed epochs before them",
                    non_negative_number)
      .preset_value("--repeat", &Settings::repeat, {}, "sweeps, pooled", positive_number)
      .preset_value("--prefetch", &Settings::prefetch, {}, "loader prefetch_chunks",
                    positive_number)
      .option("--json", &Settings::json_path, "write the results to this JSON file");
  return options;
}

DataSettings resolve_data_settings(const OptionTable<DataSettings>& options, int max_ranks) {
  DataSettings settings = options.resolve();
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
  settings.rank_counts = sorted_distinct(settings.rank_counts);
  for (const int ranks : settings.rank_counts) {
    if (ranks > max_ranks) {
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
