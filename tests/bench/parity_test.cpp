// Compute parity (bench/cases/parity.h): the plain-step lines every --reference pytorch run
// prints (ddp's baseline round; hybrid's and ps's timed plain steps), the note on thread counts,
// the reference's "plain_step" JSON and the document's section. Pure: fixed numbers, no timing.
#include "cases/parity.h"

#include <gtest/gtest.h>

#include <sstream>

#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

const PlainStepNames kPsNames{"no ps", "the gradwire/pytorch ratios above",
                              "the parameter servers"};

PlainStep step(std::vector<double> seconds, int threads = 1) {
  PlainStep plain;
  plain.seconds = std::move(seconds);
  plain.warmup = 3;
  plain.threads = threads;
  return plain;
}

TEST(Parity, P50sRatioAndTheTenPercentRule) {
  const auto close = compute_parity({0.3, 0.1, 0.2}, {0.2, 0.25, 0.15});  // p50 .2 and .2
  ASSERT_TRUE(close);
  EXPECT_DOUBLE_EQ(close->gradwire_p50, 0.2);
  EXPECT_DOUBLE_EQ(close->reference_p50, 0.2);
  EXPECT_DOUBLE_EQ(close->ratio, 1.0);
  EXPECT_FALSE(close->differs);
  EXPECT_FALSE(compute_parity({0.109}, {0.1})->differs);  // within 10% either way
  EXPECT_FALSE(compute_parity({0.1}, {0.109})->differs);
  EXPECT_TRUE(compute_parity({0.111}, {0.1})->differs);
  EXPECT_TRUE(compute_parity({0.1}, {0.111})->differs);
  EXPECT_FALSE(compute_parity({}, {0.1}));
  EXPECT_FALSE(compute_parity({0.1}, {}));
  EXPECT_FALSE(compute_parity({0.1}, {0.0}));
}

TEST(Parity, LinesNameTheCasesPlainStep) {
  // ddp's wording is the default.
  EXPECT_EQ(compute_parity_lines({0.095}, {0.1}),
            (std::vector<std::string>{
                "plain step (no ddp): gradwire p50 0.0950s, pytorch p50 0.1000s, 0.950x"}));
  const auto apart = compute_parity_lines({0.0045}, {0.0064}, kPsNames);
  ASSERT_EQ(apart.size(), 2u);
  // Seconds as the tables print them: 6 decimals below 10 ms.
  EXPECT_EQ(apart[0], "plain step (no ps): gradwire p50 0.004500s, pytorch p50 0.006400s, 0.703x");
  EXPECT_EQ(apart[1],
            "  they differ by more than 10%: the gradwire/pytorch ratios above include that "
            "difference in plain compute, not only the parameter servers");
  EXPECT_TRUE(compute_parity_lines({}, {0.1}, kPsNames).empty());
}

TEST(Parity, BothSidesOfARun) {
  PlainStepParity parity{step({0.1, 0.1}), step({0.1})};
  EXPECT_EQ(plain_step_lines(parity, kPsNames),
            (std::vector<std::string>{
                "plain step (no ps): gradwire p50 0.1000s, pytorch p50 0.1000s, 1.000x"}));
  // Each side on its trainers' thread count: said when they differ.
  parity.gradwire.threads = 4;
  const auto lines = plain_step_lines(parity, kPsNames);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(
      lines[1],
      "  gradwire's plain step ran with 4 intra-op threads, pytorch's with 1 intra-op thread, "
      "as each side's trainers do");
  // A reference script from before the plain step writes none.
  parity.reference.reset();
  ASSERT_EQ(plain_step_lines(parity, kPsNames).size(), 1u);
  EXPECT_NE(plain_step_lines(parity, kPsNames)[0].find("the reference timed none"),
            std::string::npos);
  std::ostringstream out;
  print_plain_step_parity(out, PlainStepParity{step({0.2}), step({0.1})}, kPsNames);
  EXPECT_EQ(out.str(),
            "\nplain step (no ps): gradwire p50 0.2000s, pytorch p50 0.1000s, 2.000x\n"
            "  they differ by more than 10%: the gradwire/pytorch ratios above include that "
            "difference in plain compute, not only the parameter servers\n");
}

TEST(Parity, ReadsTheReferencesPlainStepAndPoolsRepeats) {
  const nlohmann::json written = {{"seconds", {0.5, 0.25}}, {"warmup", 3}, {"threads", 1}};
  PlainStep theirs = parse_plain_step(written, "reference");
  EXPECT_EQ(theirs.seconds, (std::vector<double>{0.5, 0.25}));
  EXPECT_EQ(theirs.warmup, 3);
  EXPECT_EQ(theirs.threads, 1);
  EXPECT_EQ(to_json(theirs), written);
  EXPECT_THROW(parse_plain_step(nlohmann::json::object(), "reference"), InvalidArgument);
  EXPECT_THROW(parse_plain_step({{"seconds", "fast"}}, "reference"), InvalidArgument);

  // --repeat: each repeat's seconds after the earlier ones', on either side.
  PlainStepParity parity;
  add_gradwire_plain_step(parity, step({0.1}, 2));
  add_gradwire_plain_step(parity, step({0.3}, 2));
  EXPECT_EQ(parity.gradwire.seconds, (std::vector<double>{0.1, 0.3}));
  EXPECT_EQ(parity.gradwire.threads, 2);
  add_reference_plain_step(parity, {{"trainers", nlohmann::json::array()}}, "old script");
  EXPECT_FALSE(parity.reference);  // a document without one
  add_reference_plain_step(parity, {{"plain_step", written}}, "reference");
  add_reference_plain_step(parity, {{"plain_step", written}}, "reference");
  ASSERT_TRUE(parity.reference);
  EXPECT_EQ(parity.reference->seconds, (std::vector<double>{0.5, 0.25, 0.5, 0.25}));
  EXPECT_THROW(add_reference_plain_step(parity, {{"plain_step", 1}}, "reference"), InvalidArgument);
}

TEST(Parity, DocumentSection) {
  const nlohmann::json section =
      plain_step_json(PlainStepParity{step({0.2}, 2), step({0.1})}, kPsNames);
  EXPECT_EQ(section.at("what"), "no ps");
  EXPECT_EQ(section.at("gradwire").at("threads"), 2);
  EXPECT_EQ(section.at("pytorch").at("seconds"), nlohmann::json({0.1}));
  EXPECT_DOUBLE_EQ(section.at("p50_ratio").get<double>(), 2.0);
  EXPECT_EQ(section.at("differs_by_more_than_10_percent"), true);
  const nlohmann::json without = plain_step_json(PlainStepParity{step({0.2}), {}}, kPsNames);
  EXPECT_TRUE(without.at("pytorch").is_null());
  EXPECT_TRUE(without.at("p50_ratio").is_null());
  EXPECT_TRUE(without.at("differs_by_more_than_10_percent").is_null());
}

}  // namespace
}  // namespace gradwire::bench
