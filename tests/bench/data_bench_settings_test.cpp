// gradwire-bench data: flags to settings, and the measurements of a sweep.
#include "cases/data_bench_settings.h"

#include <gtest/gtest.h>

#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

TEST(DataBenchSettingsTest, DefaultPresetMeasuresBothSetsBothCompressionsOneAndTwoRanks) {
  const DataSettings settings = resolve_data_settings(DataFlags{}, 2);
  ASSERT_EQ(settings.sets.size(), 2u);
  EXPECT_EQ(settings.sets[0].name, "fashion-mnist");
  EXPECT_EQ(settings.sets[0].source, DataSource::kFashionMnist);
  EXPECT_EQ(settings.sets[1].name, "generated");
  EXPECT_EQ(settings.generated.bytes, 256u << 20);
  EXPECT_EQ(settings.generated.files, 8);
  EXPECT_EQ(settings.generated.mean_record_bytes, 4096u);
  EXPECT_EQ(settings.compressions, (std::vector<std::string>{"none", "zstd"}));
  EXPECT_EQ(settings.partitions, (std::vector<std::string>{"static", "dynamic"}));
  EXPECT_EQ(settings.rank_counts, (std::vector<int>{1, 2}));
  EXPECT_EQ(settings.epochs, 5);
  EXPECT_EQ(settings.warmup, 1);
  EXPECT_EQ(settings.repeat, 1);
  EXPECT_EQ(settings.prefetch, 4);
  EXPECT_EQ(data_world_size(settings), 2);
}

TEST(DataBenchSettingsTest, QuickPresetIsSmallerAndFlagsOverrideIt) {
  DataFlags flags;
  flags.preset = "quick";
  DataSettings settings = resolve_data_settings(flags, 2);
  EXPECT_EQ(settings.generated.bytes, 32u << 20);
  EXPECT_EQ(settings.generated.files, 4);
  EXPECT_EQ(settings.epochs, 2);

  flags.generated_bytes = "2M";
  flags.generated_files = 3;
  flags.record_bytes = "1K";
  flags.epochs = 4;
  flags.warmup = 0;
  flags.repeat = 3;
  flags.prefetch = 2;
  flags.rank_counts = {2, 1, 2};
  settings = resolve_data_settings(flags, 2);
  EXPECT_EQ(settings.generated.bytes, 2u << 20);
  EXPECT_EQ(settings.generated.files, 3);
  EXPECT_EQ(settings.generated.mean_record_bytes, 1024u);
  EXPECT_EQ(settings.epochs, 4);
  EXPECT_EQ(settings.warmup, 0);
  EXPECT_EQ(settings.repeat, 3);
  EXPECT_EQ(settings.prefetch, 2);
  EXPECT_EQ(settings.rank_counts, (std::vector<int>{1, 2}));  // sorted, duplicates dropped
}

TEST(DataBenchSettingsTest, DataDirectoryReplacesFashionMnist) {
  DataFlags flags;
  flags.data_dir = "/some/dir";
  const DataSettings settings = resolve_data_settings(flags, 2);
  ASSERT_EQ(settings.sets.size(), 2u);
  EXPECT_EQ(settings.sets[0].name, "data");
  EXPECT_EQ(settings.sets[0].source, DataSource::kDirectory);
  EXPECT_EQ(settings.sets[0].directory, "/some/dir");
}

TEST(DataBenchSettingsTest, RejectsBadValuesNamingThem) {
  const auto message_of = [](const DataFlags& flags, int max_ranks = 2) -> std::string {
    try {
      resolve_data_settings(flags, max_ranks);
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "";
  };
  DataFlags flags;
  flags.preset = "huge";
  EXPECT_NE(message_of(flags).find("unknown preset 'huge'"), std::string::npos);
  flags = {};
  flags.sets = {"imagenet"};
  EXPECT_NE(message_of(flags).find("unknown data set 'imagenet'"), std::string::npos);
  flags = {};
  flags.compressions = {"lz4"};
  EXPECT_NE(message_of(flags).find("unknown compression 'lz4'"), std::string::npos);
  flags = {};
  flags.partitions = {"random"};
  EXPECT_NE(message_of(flags).find("unknown partition 'random'"), std::string::npos);
  flags = {};
  flags.rank_counts = {4};
  EXPECT_NE(message_of(flags).find("rank count 4 is outside 1..2"), std::string::npos);
  flags = {};
  flags.epochs = 0;
  EXPECT_NE(message_of(flags).find("--epochs"), std::string::npos);
  flags = {};
  flags.generated_bytes = "1K";
  EXPECT_NE(message_of(flags).find("less than one record per file"), std::string::npos);
  flags = {};
  flags.generated_bytes = "lots";
  EXPECT_FALSE(message_of(flags).empty());
}

TEST(DataBenchSettingsTest, CasesPutTheRawReadBeforeEachPartition) {
  DataFlags flags;
  flags.sets = {"generated"};
  flags.compressions = {"zstd"};
  const std::vector<DataCase> cases = data_cases(resolve_data_settings(flags, 2));
  ASSERT_EQ(cases.size(), 8u);
  const std::vector<std::pair<int, std::string>> expected = {
      {1, "raw"}, {1, "raw+crc"}, {1, "static"}, {1, "dynamic"},
      {2, "raw"}, {2, "raw+crc"}, {2, "static"}, {2, "dynamic"}};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(cases[i].set, "generated");
    EXPECT_EQ(cases[i].compression, "zstd");
    EXPECT_EQ(cases[i].ranks, expected[i].first) << i;
    EXPECT_EQ(cases[i].mode, expected[i].second) << i;
  }
}

TEST(DataBenchSettingsTest, DataDirectoryIsMeasuredOnceAsItIs) {
  DataFlags flags;
  flags.data_dir = "/d";
  flags.partitions = {"static"};
  flags.rank_counts = {1};
  const std::vector<DataCase> cases = data_cases(resolve_data_settings(flags, 2));
  // data: as-is; generated: none and zstd; each raw, raw+crc and static on 1 rank.
  ASSERT_EQ(cases.size(), 9u);
  EXPECT_EQ(cases[0].set, "data");
  EXPECT_EQ(cases[0].compression, "as-is");
  EXPECT_EQ(cases[1].mode, "raw+crc");
  EXPECT_EQ(cases[2].mode, "static");
  EXPECT_EQ(cases[3].set, "generated");
  EXPECT_EQ(cases[3].compression, "none");
  EXPECT_EQ(cases[6].compression, "zstd");
}

}  // namespace
}  // namespace gradwire::bench
