#include "gradwire/common/env.h"

#include <gtest/gtest.h>

#include "gradwire/common/error.h"

namespace gradwire {
namespace {

TEST(EnvMap, GetAndGetInt) {
  EnvMap env({{"A", "12"}, {"B", "x1"}, {"E", ""}});
  EXPECT_EQ(env.get("A"), "12");
  EXPECT_EQ(env.get("E"), "");
  EXPECT_FALSE(env.get("MISSING").has_value());
  EXPECT_EQ(env.get_int("A"), 12);
  EXPECT_FALSE(env.get_int("MISSING").has_value());
  try {
    env.get_int("B");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("B='x1'"), std::string::npos);
  }
  EXPECT_THROW(env.get_int("E"), ConfigError);
}

TEST(EnvMap, FromProcessSeesPath) { EXPECT_TRUE(EnvMap::from_process().has("PATH")); }

TEST(ParseDuration, Units) {
  using std::chrono::milliseconds;
  EXPECT_EQ(parse_duration("30", "X"), milliseconds(30000));
  EXPECT_EQ(parse_duration("1.5s", "X"), milliseconds(1500));
  EXPECT_EQ(parse_duration("500ms", "X"), milliseconds(500));
  EXPECT_EQ(parse_duration("2m", "X"), milliseconds(120000));
  EXPECT_THROW(parse_duration("soon", "X"), ConfigError);
  EXPECT_THROW(parse_duration("5h", "X"), ConfigError);
  EXPECT_THROW(parse_duration("", "X"), ConfigError);
}

}  // namespace
}  // namespace gradwire
