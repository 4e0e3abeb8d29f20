// gradwire-bench data: rows, ratios against the raw read, the table and the JSON document.
#include "cases/data_bench_report.h"

#include <gtest/gtest.h>

#include <sstream>

#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

std::vector<DataRow> sample_rows() {
  // 1 MB of files; raw 10 ms, the loader 25 ms (static) and 40 ms (dynamic); zstd rows slower.
  return {make_data_row({"generated", "none", 1, "raw"}, 1000000, 0, 0, {0.010, 0.012, 0.010}, 0),
          make_data_row({"generated", "none", 1, "static"}, 1000000, 500, 900000,
                        {0.025, 0.030, 0.020}, 0),
          make_data_row({"generated", "none", 1, "dynamic"}, 1000000, 500, 900000, {0.040}, 1),
          make_data_row({"generated", "zstd", 1, "raw"}, 500000, 0, 0, {0.005}, 0),
          make_data_row({"generated", "zstd", 1, "static"}, 500000, 500, 900000, {0.100}, 0),
          make_data_row({"generated", "none", 1, "raw+crc"}, 1000000, 0, 0, {0.050}, 0)};
}

TEST(DataBenchReportTest, RowsUseTheMedianEpoch) {
  const DataRow row = sample_rows()[1];
  EXPECT_EQ(row.seconds.count, 3u);
  EXPECT_DOUBLE_EQ(row.seconds.p50, 0.025);
  EXPECT_DOUBLE_EQ(row.records_per_second, 500 / 0.025);
  EXPECT_DOUBLE_EQ(row.file_mbps, 1.0 / 0.025);
  EXPECT_DOUBLE_EQ(row.record_mbps, 0.9 / 0.025);
  EXPECT_THROW(make_data_row({"x", "none", 1, "raw"}, 1, 0, 0, {}, 0), InvalidArgument);
}

TEST(DataBenchReportTest, RatiosCompareWithTheRawReadOfTheSameFiles) {
  std::vector<DataRow> rows = sample_rows();
  attach_raw_ratios(rows);
  EXPECT_FALSE(rows[0].vs_raw);
  ASSERT_TRUE(rows[1].vs_raw);
  EXPECT_DOUBLE_EQ(*rows[1].vs_raw, 0.010 / 0.025);
  EXPECT_DOUBLE_EQ(*rows[2].vs_raw, 0.010 / 0.040);
  EXPECT_DOUBLE_EQ(*rows[4].vs_raw, 0.005 / 0.100);  // zstd against the zstd files' raw read
  EXPECT_DOUBLE_EQ(*rows[5].vs_raw, 0.010 / 0.050);
  EXPECT_FALSE(rows[5].vs_crc);
  EXPECT_DOUBLE_EQ(*rows[1].vs_crc, 0.050 / 0.025);  // raw+crc 50 ms / static 25 ms
  EXPECT_FALSE(rows[4].vs_crc);                      // no zstd raw+crc row here
  // Only uncompressed loader rows count for the target (not raw+crc's 0.2).
  EXPECT_DOUBLE_EQ(*worst_uncompressed_ratio(rows), 0.25);
  EXPECT_FALSE(worst_uncompressed_ratio({rows[0], rows[3], rows[4]}));

  std::vector<DataRow> without_raw = {sample_rows()[1]};
  attach_raw_ratios(without_raw);
  EXPECT_FALSE(without_raw[0].vs_raw);
}

TEST(DataBenchReportTest, TableShowsEveryRowAndTheTarget) {
  std::vector<DataRow> rows = sample_rows();
  attach_raw_ratios(rows);
  std::ostringstream out;
  DataSetReport set{"generated", "none", 2, {1000000, 500, 4, "none"}};
  print_data_table(out, {set}, rows);
  const std::string text = out.str();
  EXPECT_NE(text.find("# generated (none): 2 files, 1.0 MB, 500 records in 4 chunks"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vs raw"), std::string::npos);
  EXPECT_NE(text.find("0.40"), std::string::npos) << text;
  EXPECT_NE(text.find("worst 0.25 (target >= 0.50): NOT met"), std::string::npos) << text;
  std::size_t lines = 0;
  for (const char c : text) lines += c == '\n';
  EXPECT_EQ(lines, 1u + 1u + rows.size() + 1u);  // set, header, rows, target
}

TEST(DataBenchReportTest, JsonDocumentHoldsSettingsSetsRowsAndTarget) {
  std::vector<DataRow> rows = sample_rows();
  attach_raw_ratios(rows);
  RunMetadata metadata;
  metadata.ranks = 2;
  DataSettings settings;
  settings.preset = "quick";
  settings.rank_counts = {1, 2};
  const nlohmann::json document = data_document(
      metadata, settings, {{"generated", "none", 2, {1000000, 500, 4, "none"}}}, rows);
  EXPECT_EQ(document.at("schema_version"), kSchemaVersion);
  EXPECT_EQ(document.at("benchmark"), "data");
  EXPECT_EQ(document.at("settings").at("preset"), "quick");
  EXPECT_EQ(document.at("sets").at(0).at("records"), 500);
  ASSERT_EQ(document.at("results").size(), rows.size());
  const auto& row = document.at("results").at(1);
  EXPECT_EQ(row.at("mode"), "static");
  EXPECT_DOUBLE_EQ(row.at("time_ms").at("p50").get<double>(), 25.0);
  EXPECT_DOUBLE_EQ(row.at("vs_raw").get<double>(), 0.4);
  EXPECT_TRUE(document.at("results").at(0).at("vs_raw").is_null());
  EXPECT_DOUBLE_EQ(row.at("vs_crc").get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(document.at("target").at("worst_uncompressed_vs_raw").get<double>(), 0.25);
  EXPECT_EQ(document.at("target").at("met"), false);
  EXPECT_EQ(document.at("wrong"), 1);
  const auto& generic = document.at("rows").at("entries");  // harness/rows.h, milliseconds
  ASSERT_EQ(generic.size(), rows.size());
  EXPECT_EQ(generic[1].at("labels").at("mode"), "static");
  EXPECT_DOUBLE_EQ(generic[1].at("samples").at(0).get<double>(), rows[1].samples[0] * 1e3);
}

}  // namespace
}  // namespace gradwire::bench
