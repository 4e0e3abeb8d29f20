// Host discovery's parsing (pure) and its script runner.
#include "launch/host_discovery.h"

#include <gtest/gtest.h>

#include "gradwire/common/error.h"

namespace gradwire::launch::detail {
namespace {

TEST(HostDiscovery, SlotsOfOneHostAddUp) {
  const std::string output = "# hosts\nnode-a:4\nnode-b:2\n\n  node-a:1  \nnode-c\n";
  EXPECT_EQ(discovered_slots(output, "node-a"), 5);
  EXPECT_EQ(discovered_slots(output, "node-b"), 2);
  EXPECT_EQ(discovered_slots(output, "node-c"), 1);  // no ":SLOTS": one
  EXPECT_EQ(discovered_slots(output, "node-d"), 0);  // not listed: none
  EXPECT_EQ(discovered_slots("", "node-a"), 0);
}

TEST(HostDiscovery, MalformedLinesAreNamed) {
  try {
    discovered_slots("node-a:4\nnode-b:two\n", "node-a");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("line 2 'node-b:two'"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(discovered_slots("node-a:-1\n", "node-a"), InvalidArgument);
  EXPECT_THROW(discovered_slots(":3\n", "node-a"), InvalidArgument);
  EXPECT_THROW(discovered_slots("node-a:\n", "node-a"), InvalidArgument);
}

TEST(HostDiscovery, TheScriptsOutputOrWhyNot) {
  EXPECT_EQ(run_discovery_script("echo localhost:3", std::chrono::seconds(10)), "localhost:3\n");
  EXPECT_THROW(run_discovery_script("exit 3", std::chrono::seconds(10)), Error);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(run_discovery_script("sleep 20", std::chrono::milliseconds(200)), Error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace gradwire::launch::detail
