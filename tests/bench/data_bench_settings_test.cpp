// gradwire-bench data: flags to settings, and the measurements of a sweep.
#include "cases/data_bench_settings.h"

#include <gtest/gtest.h>

#include "bench_process.h"
#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

DataSettings resolve(const std::string& flags, int max_ranks = 2) {
  return resolve_data_settings(data_options().parse(flags), max_ranks);
}

TEST(DataBenchSettingsTest, DefaultPresetMeasuresBothSetsBothCompressionsOneAndTwoRanks) {
  const DataSettings settings = resolve("");
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
  DataSettings settings = resolve("--preset quick");
  EXPECT_EQ(settings.generated.bytes, 32u << 20);
  EXPECT_EQ(settings.generated.files, 4);
  EXPECT_EQ(settings.epochs, 2);

  settings = resolve(
      "--preset quick --generated-bytes 2M --generated-files 3 --record-bytes 1K --epochs 4 "
      "--warmup 0 --repeat 3 --prefetch 2 --rank-counts 2,1,2 --sets generated --compressions "
      "zstd,none --scratch /s --json d.json");
  EXPECT_EQ(settings.generated.bytes, 2u << 20);
  EXPECT_EQ(settings.generated.files, 3);
  EXPECT_EQ(settings.generated.mean_record_bytes, 1024u);
  EXPECT_EQ(settings.epochs, 4);
  EXPECT_EQ(settings.warmup, 0);
  EXPECT_EQ(settings.repeat, 3);
  EXPECT_EQ(settings.prefetch, 2);
  EXPECT_EQ(settings.rank_counts, (std::vector<int>{1, 2}));  // sorted, duplicates dropped
  ASSERT_EQ(settings.sets.size(), 1u);
  EXPECT_EQ(settings.sets[0].source, DataSource::kGenerated);
  EXPECT_EQ(settings.compressions, (std::vector<std::string>{"none", "zstd"}));  // known order
  EXPECT_EQ(settings.scratch_dir, "/s");
  EXPECT_EQ(settings.json_path, "d.json");
}

TEST(DataBenchSettingsTest, DataDirectoryReplacesFashionMnist) {
  const DataSettings settings = resolve("--data /some/dir");
  ASSERT_EQ(settings.sets.size(), 2u);
  EXPECT_EQ(settings.sets[0].name, "data");
  EXPECT_EQ(settings.sets[0].source, DataSource::kDirectory);
  EXPECT_EQ(settings.sets[0].directory, "/some/dir");
}

TEST(DataBenchSettingsTest, RejectsBadValuesNamingThem) {
  const auto message_of = [](const std::string& flags) {
    return testing::invalid_argument_message([&] { resolve(flags); });
  };
  EXPECT_EQ(message_of("--rank-counts 4"), "rank count 4 is outside 1..2");
  EXPECT_EQ(message_of("--generated-files 0"), "--generated-files must be at least 1 (got 0)");
  EXPECT_EQ(message_of("--record-bytes 1"), "--record-bytes must be at least 2");
  EXPECT_NE(message_of("--generated-bytes 1K").find("less than one record per file"),
            std::string::npos);
  EXPECT_FALSE(message_of("--generated-bytes lots").empty());
  EXPECT_THROW(  // given, and not a size
      resolve_data_settings(data_options().parse(std::vector<std::string>{"--generated-bytes", ""}),
                            2),
      InvalidArgument);
  for (const char* flag : {"--sets", "--compressions", "--partitions"}) {
    EXPECT_THROW(resolve(std::string(flag) + " other"), CLI::ValidationError) << flag;
  }
}

TEST(DataBenchSettingsTest, CasesPutTheRawReadBeforeEachPartition) {
  const std::vector<DataCase> cases = data_cases(resolve("--sets generated --compressions zstd"));
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
  const std::vector<DataCase> cases =
      data_cases(resolve("--data /d --partitions static --rank-counts 1"));
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
