// Runs the real gradwire-bench data (GRADWIRE_BENCH_PATH) on small generated sets: 2 local ranks,
// both partitions and compressions; a directory given with --data; and a failure named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "bench_process.h"
#include "cases/data_bench_files.h"
#include "harness/report.h"

namespace gradwire::bench {
namespace {

using namespace testing;  // bench_process.h

namespace fs = std::filesystem;

TEST(DataBenchRunTest, TwoRanksMeasureEveryCaseAndEveryRecordArrives) {
  const std::string json = temp_path("data.json");
  const std::string scratch = temp_path("data_scratch");
  const BenchRun run = run_bench(
      "data --preset quick --sets generated --generated-bytes 2M --generated-files 3 "
      "--record-bytes 2K --epochs 2 --scratch '" +
      scratch + "' --json '" + json + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("uncompressed loader vs raw read: worst"), std::string::npos)
      << run.output;

  const nlohmann::json document = read_json_file(json);
  // Its generic rows: diff compares every one, report draws a chart per set.
  const auto self = testing::diff_and_report(json);
  EXPECT_EQ(count(self.diff, "+0.0%"), 2 * document.at("results").size()) << self.diff;
  EXPECT_NE(self.report.find("wrote 1 chart from 1 file"), std::string::npos) << self.report;
  std::remove(json.c_str());
  EXPECT_EQ(document.at("benchmark"), "data");
  EXPECT_EQ(document.at("metadata").at("ranks"), 2);
  EXPECT_EQ(document.at("wrong"), 0);
  ASSERT_EQ(document.at("sets").size(), 2u);  // generated none and zstd
  const auto records = document.at("sets").at(0).at("records").get<std::uint64_t>();
  EXPECT_GT(records, 0u);
  const auto& results = document.at("results");
  // 2 compressions x 2 rank counts x (raw, raw+crc, static, dynamic)
  ASSERT_EQ(results.size(), 16u);
  for (const auto& row : results) {
    EXPECT_EQ(row.at("time_ms").at("count"), 2) << row;
    EXPECT_GT(row.at("file_mbps").get<double>(), 0.0) << row;
    if (row.at("mode") == "raw") continue;
    EXPECT_GT(row.at("vs_raw").get<double>(), 0.0) << row;
    if (row.at("mode") == "raw+crc") continue;
    EXPECT_EQ(row.at("records"), records) << row;
    EXPECT_GT(row.at("vs_raw").get<double>(), 0.0) << row;
    EXPECT_EQ(row.at("wrong"), 0) << row;
  }
  // --scratch keeps the files for the next run.
  EXPECT_EQ(list_record_files(scratch + "/generated-zstd").size(), 3u);
  fs::remove_all(scratch);
}

TEST(DataBenchRunTest, ReadsADirectoryAsItIsOnOneRank) {
  const std::string directory = temp_path("data_dir");
  GeneratedSpec spec{1 << 20, 2, 1024, 65536};
  write_generated_set(directory, spec, data::Compression::kZstd);
  const std::string json = temp_path("dir.json");
  const BenchRun run =
      run_bench("data --data '" + directory +
                "' --sets fashion-mnist --rank-counts 1 --partitions static,dynamic --epochs 1 "
                "--json '" +
                json + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json document = read_json_file(json);
  std::remove(json.c_str());
  EXPECT_EQ(document.at("metadata").at("ranks"), 1);
  ASSERT_EQ(document.at("results").size(), 4u);  // raw, raw+crc, static, dynamic
  for (const auto& row : document.at("results")) {
    EXPECT_EQ(row.at("set"), "data");
    EXPECT_EQ(row.at("compression"), "zstd");  // found in the chunk headers
  }
  EXPECT_TRUE(document.at("target").at("met").is_null());  // no uncompressed rows
  fs::remove_all(directory);
}

TEST(DataBenchRunTest, AnEmptyDataDirectoryIsNamed) {
  const std::string directory = temp_path("empty_dir");
  fs::create_directories(directory);
  const BenchRun run =
      run_bench("data --data '" + directory + "' --sets fashion-mnist --rank-counts 1 --epochs 1");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("holds no .gwrio files"), std::string::npos) << run.output;
  fs::remove_all(directory);
}

}  // namespace
}  // namespace gradwire::bench
