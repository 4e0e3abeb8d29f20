// TableConfig: validate() names the field, same_table(), describe(), to_string(); the sharding
// rule and shard sizes without overflow.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "gradwire/common/error.h"
#include "gradwire/ps/table.h"

namespace gradwire::ps {
namespace {

using ::testing::HasSubstr;

TableConfig good_config() {
  TableConfig config;
  config.name = "emb_1.v2-a";
  config.num_rows = 300;
  config.dim = 64;
  return config;
}

// The message of validate(config after `change`), or "" when it passes.
std::string validate_message(const std::function<void(TableConfig&)>& change) {
  TableConfig config = good_config();
  change(config);
  try {
    validate(config);
  } catch (const InvalidArgument& error) {
    return error.what();
  }
  return "";
}

TEST(TableConfigTest, GoodConfigPasses) { EXPECT_NO_THROW(validate(good_config())); }

TEST(TableConfigTest, ErrorsNameTheField) {
  EXPECT_THAT(validate_message([](TableConfig& c) { c.name = ""; }), HasSubstr("name"));
  EXPECT_THAT(validate_message([](TableConfig& c) { c.name = "a/b"; }), HasSubstr("name"));
  EXPECT_THAT(validate_message([](TableConfig& c) { c.name = std::string(65, 'x'); }),
              HasSubstr("name"));
  // A long name from a request is not echoed whole.
  EXPECT_LT(validate_message([](TableConfig& c) { c.name = std::string(1 << 20, 'x'); }).size(),
            1024u);
  EXPECT_THAT(validate_message([](TableConfig& c) { c.num_rows = 0; }), HasSubstr("num_rows"));
  EXPECT_THAT(validate_message([](TableConfig& c) { c.dim = -1; }), HasSubstr("dim"));
  EXPECT_THAT(validate_message([](TableConfig& c) { c.optimizer.lr = 0; }),
              HasSubstr("optimizer.lr"));
  EXPECT_THAT(validate_message([](TableConfig& c) { c.optimizer.lr = NAN; }),
              HasSubstr("optimizer.lr"));
  EXPECT_THAT(validate_message([](TableConfig& c) { c.optimizer.momentum = -0.5; }),
              HasSubstr("optimizer.momentum"));
  EXPECT_THAT(validate_message([](TableConfig& c) { c.optimizer.beta1 = 1.0; }),
              HasSubstr("optimizer.beta1"));
  EXPECT_THAT(validate_message([](TableConfig& c) { c.optimizer.beta2 = -0.1; }),
              HasSubstr("optimizer.beta2"));
  EXPECT_THAT(validate_message([](TableConfig& c) { c.optimizer.eps = 0; }),
              HasSubstr("optimizer.eps"));
  EXPECT_THAT(validate_message([](TableConfig& c) { c.initializer.scale = -1; }),
              HasSubstr("initializer.scale"));
  EXPECT_THAT(validate_message([](TableConfig& c) { c.num_trainers = 0; }),
              HasSubstr("num_trainers"));
  EXPECT_THAT(validate_message([](TableConfig& c) { c.mode = static_cast<UpdateMode>(7); }),
              HasSubstr("mode"));
  EXPECT_THAT(validate_message([](TableConfig& c) { c.num_rows = int64_t{1} << 51; }),
              HasSubstr("num_rows x dim"));
  // The table's name is part of the message.
  EXPECT_THAT(validate_message([](TableConfig& c) { c.dim = 0; }), HasSubstr("'emb_1.v2-a'"));
}

TEST(TableConfigTest, SameTableComparesEveryField) {
  const TableConfig a = good_config();
  EXPECT_TRUE(same_table(a, a));
  const std::function<void(TableConfig&)> changes[] = {
      [](TableConfig& c) { c.name = "other"; },
      [](TableConfig& c) { c.num_rows = 301; },
      [](TableConfig& c) { c.dim = 32; },
      [](TableConfig& c) { c.optimizer.kind = OptimizerKind::kAdam; },
      [](TableConfig& c) { c.optimizer.lr = 0.02; },
      [](TableConfig& c) { c.optimizer.momentum = 0.9; },
      [](TableConfig& c) { c.optimizer.beta1 = 0.8; },
      [](TableConfig& c) { c.optimizer.beta2 = 0.99; },
      [](TableConfig& c) { c.optimizer.eps = 1e-10; },
      [](TableConfig& c) { c.initializer.kind = InitializerKind::kZeros; },
      [](TableConfig& c) { c.initializer.scale = 0.5; },
      [](TableConfig& c) { c.initializer.seed = 9; },
      [](TableConfig& c) { c.mode = UpdateMode::kAsync; },
      [](TableConfig& c) { c.reduction = GradientReduction::kSum; },
      [](TableConfig& c) { c.num_trainers = 2; },
  };
  for (const auto& change : changes) {
    TableConfig b = a;
    change(b);
    EXPECT_FALSE(same_table(a, b)) << describe(b);
    EXPECT_FALSE(same_table(b, a)) << describe(b);
  }
}

TEST(TableConfigTest, DescribeIsOneReadableLine) {
  TableConfig config = good_config();
  config.name = "emb";
  config.optimizer.kind = OptimizerKind::kAdagrad;
  config.optimizer.lr = 0.05;
  config.num_trainers = 2;
  EXPECT_EQ(describe(config), "table 'emb' (300 x 64, adagrad lr 0.05, sync, 2 trainers)");
  config.mode = UpdateMode::kAsync;
  config.num_trainers = 1;
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.momentum = 0.9;
  EXPECT_EQ(describe(config), "table 'emb' (300 x 64, sgd lr 0.05 momentum 0.9, async, 1 trainer)");
}

TEST(TableConfigTest, EnumNames) {
  EXPECT_STREQ(to_string(OptimizerKind::kAdam), "adam");
  EXPECT_STREQ(to_string(InitializerKind::kUniform), "uniform");
  EXPECT_STREQ(to_string(UpdateMode::kAsync), "async");
  EXPECT_STREQ(to_string(GradientReduction::kSum), "sum");
}

TEST(TableConfigTest, ShardingRuleCoversEveryRowOnce) {
  for (int servers = 1; servers <= 4; ++servers) {
    int64_t total = 0;
    for (int s = 0; s < servers; ++s) total += rows_on_server(10, s, servers);
    EXPECT_EQ(total, 10) << servers;
  }
  EXPECT_EQ(rows_on_server(2, 2, 3), 0);
  EXPECT_EQ(owner_of(17, 2), 1);
  EXPECT_EQ(local_row(17, 2), 8);
}

TEST(TableConfigTest, ShardBytesCountWeightsAndOptimizerState) {
  TableConfig config = good_config();
  config.num_rows = 10;
  config.dim = 4;
  EXPECT_EQ(shard_bytes(config, 0, 1), 10 * 4 * 4);
  EXPECT_EQ(shard_bytes(config, 1, 3), 3 * 4 * 4);  // ids 1, 4, 7
  EXPECT_EQ(shard_bytes(config, 11, 12), 0);        // no rows there
  config.optimizer.momentum = 0.9;
  EXPECT_EQ(shard_bytes(config, 0, 1), 2 * 10 * 4 * 4);
  config.optimizer.kind = OptimizerKind::kAdagrad;
  EXPECT_EQ(shard_bytes(config, 0, 1), 2 * 10 * 4 * 4);
  config.optimizer.kind = OptimizerKind::kAdam;
  EXPECT_EQ(shard_bytes(config, 0, 1), 3 * 10 * 4 * 4);
  // The largest table validate() accepts (2^56 values) fits.
  config.num_rows = int64_t{1} << 28;
  config.dim = int64_t{1} << 28;
  EXPECT_EQ(shard_bytes(config, 0, 1), int64_t{3} << 58);
}

// The table's bytes are multiplied with overflow checks, and "too large" is said instead of a
// wrapped or saturated number; a server with no rows of the table checks them too.
TEST(TableConfigTest, ShardBytesOfAHugeTableAreTooLargeOnEveryServer) {
  const auto message = [](int64_t rows, int64_t dim, int server, int servers) {
    TableConfig config = good_config();
    config.num_rows = rows;
    config.dim = dim;
    config.optimizer.kind = OptimizerKind::kAdam;
    try {
      return "returned " + std::to_string(shard_bytes(config, server, servers));
    } catch (const InvalidArgument& error) {
      return std::string(error.what());
    }
  };
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_THAT(message(int64_t{1} << 40, int64_t{1} << 40, 0, 1), HasSubstr("too large"));
  EXPECT_THAT(message(kMax, 1, 0, 2), HasSubstr("too large"));
  EXPECT_THAT(message(1, kMax, 0, 1), HasSubstr("too large"));
  EXPECT_THAT(message(kMax / 12 + 1, 1, 5, 7), HasSubstr("too large"));
  EXPECT_EQ(message(kMax / 12, 1, 0, 1), "returned " + std::to_string(kMax / 12 * 12));
  // Server 1 of 2 holds no row of a 1-row table, which is still too large.
  EXPECT_THAT(message(1, int64_t{1} << 62, 1, 2), HasSubstr("'emb_1.v2-a': num_rows x dim"));
  EXPECT_THAT(message(1, int64_t{1} << 62, 1, 2), HasSubstr("too large"));
  // Neither negative sizes nor a position that is no server pass.
  EXPECT_THAT(message(-5, 4, 0, 1), HasSubstr("num_rows x dim"));
  EXPECT_THAT(message(5, 4, 2, 2), HasSubstr("no server"));
}

TEST(TableConfigTest, ShardingRuleDoesNotOverflowForHugeTables) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(rows_on_server(kMax, 0, 1), kMax);
  EXPECT_EQ(rows_on_server(kMax, 0, 2), int64_t{1} << 62);
  EXPECT_EQ(rows_on_server(kMax, 1, 2), (int64_t{1} << 62) - 1);
  EXPECT_EQ(rows_on_server(kMax, 6, 7), kMax / 7);
  EXPECT_EQ(rows_on_server(kMax - 1, 1000, 1001), (kMax - 1) / 1001);
}

}  // namespace
}  // namespace gradwire::ps
