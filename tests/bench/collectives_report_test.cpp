#include "cases/collectives_report.h"

#include <gtest/gtest.h>

#include <sstream>

namespace gradwire::bench {
namespace {

TEST(CollectiveRowTest, BandwidthsFromMeanTime) {
  // 1 MB in a mean of 1 ms: algbw 1 GB/s; allreduce on 4 ranks: busbw 1.5 GB/s.
  const CollectiveRow row =
      make_collective_row(1000000, 250000, IterationCounts{1, 3}, {0.5e-3, 1e-3, 1.5e-3}, 1.5, 0);
  EXPECT_DOUBLE_EQ(row.seconds.mean, 1e-3);
  EXPECT_NEAR(row.algbw_gbps, 1.0, 1e-12);
  EXPECT_NEAR(row.busbw_gbps, 1.5, 1e-12);
  EXPECT_EQ(row.iterations.timed, 3);
}

TEST(CollectivesDocumentTest, HasSchemaSettingsAndRows) {
  RunMetadata metadata;
  metadata.memcpy_gbps = 10;
  const CollectivesSettings settings =
      resolve_collectives_settings(collectives_options().parse("-e 16"));
  CollectiveResult result{"allreduce", "sum", 1.0, {}};
  result.rows.push_back(make_collective_row(8, 2, IterationCounts{1, 2}, {1e-6, 1e-6}, 1.0, 0));
  result.rows.push_back(make_collective_row(16, 4, IterationCounts{1, 2}, {1e-6, 1e-6}, 1.0, 2));
  const nlohmann::json document = collectives_document(metadata, settings, {result});
  EXPECT_EQ(document.at("schema_version"), kSchemaVersion);
  EXPECT_EQ(document.at("benchmark"), "collectives");
  EXPECT_EQ(document.at("settings").at("max_bytes"), 16);
  EXPECT_EQ(document.at("wrong"), 2);
  const auto& rows = document.at("results").at(0).at("rows");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].at("bytes"), 16);
  EXPECT_NEAR(rows[1].at("time_us").at("mean").get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(rows[1].at("busbw_gbps").get<double>(), 0.016, 1e-9);
  EXPECT_NEAR(rows[1].at("busbw_vs_memcpy").get<double>(), 0.0016, 1e-9);
  const auto& generic = document.at("rows").at("entries");  // harness/rows.h, microseconds
  ASSERT_EQ(generic.size(), 2u);
  EXPECT_EQ(generic[1].at("labels").at("bytes"), 16);
  EXPECT_NEAR(generic[1].at("samples").at(0).get<double>(), 1.0, 1e-9);
}

TEST(CollectivesTableTest, PrintsOneLinePerRowAndAFooter) {
  CollectiveResult result{"broadcast", "root 0", 1.0, {}};
  result.rows.push_back(make_collective_row(8, 2, IterationCounts{1, 1}, {2e-6}, 1.0, 0));
  std::ostringstream out;
  print_collective_title(out, result, 2);
  print_collective_row(out, result.rows[0], 10.0);
  print_collective_footer(out, result, 10.0);
  const std::string text = out.str();
  EXPECT_NE(text.find("broadcast (root 0)"), std::string::npos);
  EXPECT_NE(text.find("busbw(GB/s)"), std::string::npos);
  EXPECT_NE(text.find("wrong values 0 (OK)"), std::string::npos);
}

}  // namespace
}  // namespace gradwire::bench
