// The generic rows of a result document (harness/rows.h): their JSON both ways, how a row is
// described, and the row-by-row diff; and the charts the report draws from them.
#include "harness/rows.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

RowSet two_rows(double second_sample) {
  return {{"op", "bytes"},
          "us",
          "bytes",
          "op",
          {{{{"op", "allreduce"}, {"bytes", 8}}, {1.0, 2.0, 3.0}},
           {{{"op", "allreduce"}, {"bytes", 16}}, {4.0, second_sample}}}};
}

TEST(RowsTest, JsonRoundTrip) {
  const nlohmann::json document = {{"rows", to_json(two_rows(4.0))}};
  const RowSet rows = parse_row_set(document, "doc");
  EXPECT_EQ(rows.unit, "us");
  EXPECT_EQ(rows.x, "bytes");
  EXPECT_EQ(rows.chart_by, "op");
  EXPECT_EQ(rows.dimensions, (std::vector<std::string>{"op", "bytes"}));
  ASSERT_EQ(rows.rows.size(), 2u);
  EXPECT_EQ(rows.rows[1].labels.at("bytes"), 16);
  EXPECT_EQ(rows.rows[0].samples, (std::vector<double>{1.0, 2.0, 3.0}));
}

TEST(RowsTest, MissingOrMalformedRowsAreRefusedWithTheSource) {
  for (const nlohmann::json& document :
       {nlohmann::json{{"benchmark", "x"}},
        nlohmann::json{{"rows", {{"unit", "s"}, {"dimensions", {"a"}}, {"entries", 3}}}},
        nlohmann::json{{"rows",
                        {{"unit", "s"},
                         {"dimensions", {"a"}},
                         {"entries", {{{"labels", {{"a", 1}}}, {"samples", {}}}}}}}}}) {
    try {
      parse_row_set(document, "in.json");
      FAIL() << document;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("in.json"), std::string::npos) << e.what();
    }
  }
}

TEST(RowsTest, DescribesLabelsInDimensionOrder) {
  const RowSet rows = two_rows(4.0);
  EXPECT_EQ(describe_labels(rows.rows[0], rows.dimensions), "op allreduce, bytes 8");
  EXPECT_EQ(describe_labels(rows.rows[0], rows.dimensions, {"bytes"}), "op allreduce");
}

TEST(RowsDiffTest, MatchesRowsByLabelsAndNamesTheRest) {
  RowSet test = two_rows(8.0);  // row 2: p50 6 instead of 4, i.e. 50% slower
  test.rows.push_back({{{"op", "broadcast"}, {"bytes", 8}}, {1.0}});
  std::ostringstream out;
  print_rows_diff(out, two_rows(4.0), test);
  const std::string text = out.str();
  EXPECT_NE(text.find("op allreduce, bytes 8"), std::string::npos) << text;
  EXPECT_NE(text.find("+0.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("-50.0%"), std::string::npos) << text;
  const auto only = text.find("op broadcast, bytes 8 ");  // padded to the widest label
  ASSERT_NE(only, std::string::npos) << text;
  EXPECT_EQ(text.find("  (only in test)\n", only), text.find('\n', only) - 16) << text;
  EXPECT_DOUBLE_EQ(delta_percent(4.0, 6.0), -50.0);
}

TEST(RowsDiffTest, DifferentUnitsAreRefused) {
  RowSet test = two_rows(4.0);
  test.unit = "s";
  std::ostringstream out;
  EXPECT_THROW(print_rows_diff(out, two_rows(4.0), test), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::bench
