// The declarations of the GRADWIRE_* variables (gradwire/common/settings.h).
#include "gradwire/common/settings.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "gradwire/common/env.h"
#include "gradwire/common/error.h"

namespace gradwire::settings {
namespace {

TEST(Settings, NamesAreUniqueAndEveryOneIsInTheTable) {
  std::set<std::string> names;
  const std::string table = markdown_table();
  for (const Setting* setting : kAll) {
    ASSERT_NE(setting, nullptr);
    EXPECT_EQ(std::string(setting->name).rfind("GRADWIRE_", 0), 0u) << setting->name;
    EXPECT_TRUE(names.insert(setting->name).second) << setting->name << " twice";
    EXPECT_NE(table.find(std::string("| `") + setting->name + "` |"), std::string::npos);
    for (const char* field : {setting->kind, setting->default_value, setting->read_by,
                              setting->meaning}) {
      EXPECT_NE(std::string(field), "") << setting->name;
      EXPECT_EQ(std::string(field).find('|'), std::string::npos) << setting->name;
    }
  }
}

TEST(Settings, TheTimeoutsDefaultIsTheOneDeclared) {
  EXPECT_EQ(timeout(EnvMap{}), kDefaultTimeout);
  EXPECT_EQ(std::string(kTimeout.default_value),
            std::to_string(kDefaultTimeout.count() / 1000) + "s");
  EXPECT_EQ(timeout(EnvMap({{kTimeout.name, "2m"}})), std::chrono::minutes(2));
  try {
    timeout(EnvMap({{kTimeout.name, "soon"}}));
    FAIL() << "a malformed duration was taken";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("GRADWIRE_TIMEOUT"), std::string::npos);
  }
}

}  // namespace
}  // namespace gradwire::settings
