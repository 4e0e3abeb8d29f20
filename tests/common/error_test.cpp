#include "gradwire/common/error.h"

#include <gtest/gtest.h>

namespace gradwire {
namespace {

TEST(Error, CheckMacroPrintsOperandsAndThrowsInternalError) {
  int a = 3;
  int b = 4;
  try {
    GRADWIRE_CHECK_EQ(a, b);
    FAIL() << "expected a throw";
  } catch (const InternalError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("a == b (3 vs 4)"), std::string::npos) << what;
    EXPECT_NE(what.find("error_test.cpp"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(GRADWIRE_CHECK_LT(a, b));
  EXPECT_THROW(GRADWIRE_CHECK(a > b), InternalError);
}

TEST(Error, HierarchySharesOneBase) {
  EXPECT_THROW(throw TimeoutError("t"), Error);
  EXPECT_THROW(throw PeerLostError("p", {1}), Error);
  EXPECT_THROW(throw ConfigError("c"), Error);
  PeerLostError lost("gone", {2, 5});
  EXPECT_EQ(lost.dead_ranks(), (std::vector<int>{2, 5}));
}

TEST(Error, FormatDuration) {
  EXPECT_EQ(format_duration(std::chrono::milliseconds(250)), "250 ms");
  EXPECT_EQ(format_duration(std::chrono::milliseconds(1250)), "1.25 s");
}

}  // namespace
}  // namespace gradwire
