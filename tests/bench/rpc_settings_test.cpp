// gradwire-bench rpc: flags to settings, and the payload of each call kind.
#include "cases/rpc_settings.h"

#include <gtest/gtest.h>

#include "cases/rpc_report.h"
#include "gradwire/common/error.h"

namespace gradwire::bench {
namespace {

RpcSettings resolve(const std::string& flags) { return rpc_options().parse(flags).resolve(); }

TEST(RpcBenchSettingsTest, DefaultPresetIsFiftyIdsOfSixtyFourFloats) {
  const RpcSettings settings = resolve("");
  EXPECT_EQ(settings.preset, "default");
  EXPECT_EQ(settings.ids, 50);
  EXPECT_EQ(settings.dim, 64);
  EXPECT_EQ(settings.tables, 4);
  EXPECT_EQ(settings.iters, 2000);
  EXPECT_EQ(settings.warmup, 200);
  EXPECT_TRUE(settings.json_path.empty());
  EXPECT_EQ(describe_rpc_settings(settings),
            "preset default: 50 ids x dim 64, 4 tables, 200 warm-up + 2000 timed calls of each "
            "kind on each side");
}

TEST(RpcBenchSettingsTest, QuickPresetMakesFewerCallsAndFlagsOverrideIt) {
  RpcSettings settings = resolve("--preset quick");
  EXPECT_EQ(settings.iters, 100);
  EXPECT_EQ(settings.warmup, 20);
  EXPECT_EQ(settings.ids, 50);
  settings =
      resolve("--preset quick --iters 7 --warmup 0 --ids 3 --dim 2 --tables 2 --json out.json");
  EXPECT_EQ(settings.iters, 7);
  EXPECT_EQ(settings.warmup, 0);
  EXPECT_EQ(settings.ids, 3);
  EXPECT_EQ(settings.dim, 2);
  EXPECT_EQ(settings.tables, 2);
  EXPECT_EQ(settings.json_path, "out.json");
}

TEST(RpcBenchSettingsTest, RefusesCountsBelowOne) {
  EXPECT_ANY_THROW(resolve("--iters 0"));
  EXPECT_ANY_THROW(resolve("--ids 0"));
  EXPECT_ANY_THROW(resolve("--tables 0"));
  EXPECT_ANY_THROW(resolve("--warmup -1"));
}

TEST(RpcBenchSettingsTest, EachCallKindCarriesTheBytesOfItsGradwireCall) {
  const RpcSettings settings = resolve("");
  EXPECT_EQ(rpc_request_bytes("empty", settings), 0u);
  EXPECT_EQ(rpc_response_bytes("empty", settings), 0u);
  EXPECT_EQ(rpc_request_bytes("lookup", settings), 400u);     // 50 int64 ids
  EXPECT_EQ(rpc_response_bytes("lookup", settings), 12800u);  // 50 x 64 floats
  EXPECT_EQ(rpc_request_bytes("push", settings), 13200u);     // ids and gradient rows
  EXPECT_EQ(rpc_response_bytes("push", settings), 0u);
  EXPECT_THROW(rpc_request_bytes("pull", settings), InvalidArgument);
  EXPECT_THROW(rpc_response_bytes("pull", settings), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::bench
