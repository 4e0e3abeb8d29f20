// The server's pure parts: table configs to and from messages, config differences, listen
// addresses and whether they are loopback, how long a Step call waits and how it names
// missing trainers.
#include <gtest/gtest.h>

#include <limits>

#include "gradwire/common/error.h"
#include "ps/messages/service_messages.h"
#include "ps/server/server_listen.h"
#include "ps/server/service.h"
#include "ps/server/table_registry.h"
#include "server_test_support.h"

namespace gradwire::ps {
namespace {

using namespace std::chrono_literals;

TEST(ServiceMessages, TableConfigRoundTripsEveryField) {
  TableConfig config = testing::table_config("t.1-x", 1000, 16, UpdateMode::kSync, 3);
  config.optimizer = {OptimizerKind::kAdam, 0.003, 0.5, 0.8, 0.99, 1e-6};
  config.initializer = {InitializerKind::kUniform, 0.25, 123456789012345ull};
  config.reduction = GradientReduction::kSum;
  const TableConfig back = from_message(to_message(config));
  EXPECT_EQ(describe_difference(config, back), "");
  EXPECT_TRUE(same_table(config, back));
  EXPECT_EQ(back.initializer.seed, 123456789012345ull);
  EXPECT_EQ(back.num_trainers, 3);

  for (const OptimizerKind kind :
       {OptimizerKind::kSgd, OptimizerKind::kAdagrad, OptimizerKind::kAdam}) {
    config.optimizer.kind = kind;
    EXPECT_EQ(from_message(to_message(config)).optimizer.kind, kind);
  }
  for (const InitializerKind kind :
       {InitializerKind::kNormal, InitializerKind::kUniform, InitializerKind::kZeros}) {
    config.initializer.kind = kind;
    EXPECT_EQ(from_message(to_message(config)).initializer.kind, kind);
  }
  config.mode = UpdateMode::kAsync;
  config.reduction = GradientReduction::kMean;
  EXPECT_EQ(from_message(to_message(config)).mode, UpdateMode::kAsync);
  EXPECT_EQ(from_message(to_message(config)).reduction, GradientReduction::kMean);
}

TEST(ServiceMessages, UnspecifiedOrUnknownEnumsAreNamed) {
  const v1::TableConfig good = to_message(testing::table_config());
  const auto message_of = [](const v1::TableConfig& message) -> std::string {
    try {
      from_message(message);
    } catch (const InvalidArgument& error) {
      return error.what();
    }
    return "";
  };
  v1::TableConfig message = good;
  message.mutable_optimizer()->set_kind(v1::OPTIMIZER_UNSPECIFIED);
  EXPECT_NE(message_of(message).find("optimizer.kind"), std::string::npos);
  message = good;
  message.mutable_initializer()->set_kind(static_cast<v1::InitializerKind>(9));
  EXPECT_NE(message_of(message).find("unknown value 9"), std::string::npos);
  message = good;
  message.set_mode(v1::MODE_UNSPECIFIED);
  EXPECT_NE(message_of(message).find("mode"), std::string::npos);
  message = good;
  message.set_reduction(v1::REDUCTION_UNSPECIFIED);
  EXPECT_NE(message_of(message).find("reduction"), std::string::npos);
}

TEST(ServiceMessages, DifferencesAreListed) {
  const TableConfig a = testing::table_config("emb", 300, 64);
  TableConfig b = testing::table_config("emb", 300, 32);
  EXPECT_EQ(describe_difference(a, b), "300 x 64, asked 300 x 32");
  b = a;
  b.mode = UpdateMode::kSync;
  b.num_trainers = 2;
  EXPECT_EQ(describe_difference(a, b), "mode async, asked sync; num_trainers 1, asked 2");
  b = a;
  b.optimizer.lr = 0.25;
  EXPECT_EQ(describe_difference(a, b), "lr 0.5, asked 0.25");
  EXPECT_EQ(describe_conflict(a, 0, 2, a, 1, 2),
            "table 'emb' exists with as server 0 of 2, asked server 1 of 2");
  EXPECT_EQ(describe_conflict(a, 0, 1, testing::table_config("emb", 300, 32), 0, 1),
            "table 'emb' exists with 300 x 64, asked 300 x 32");
}

TEST(ServerListen, ParsesHostAndPort) {
  EXPECT_EQ(parse_listen_address("127.0.0.1:0").host, "127.0.0.1");
  EXPECT_EQ(parse_listen_address("0.0.0.0:5000").port, 5000);
  EXPECT_EQ(parse_listen_address("[::1]:7").with_port(4242), "[::1]:4242");
  for (const char* bad :
       {"127.0.0.1", ":80", "host:", "host:x1", "host:65536", "::1:5", "host:123456"}) {
    EXPECT_THROW(parse_listen_address(bad), ConfigError) << bad;
  }
}

// Only loopback is safe for plaintext; the wildcard addresses listen on every interface.
TEST(ServerListen, TellsLoopbackFromTheNetwork) {
  for (const char* loopback : {"127.0.0.1:0", "127.255.3.4:80", "[::1]:7", "localhost:5000",
                               "LocalHost:1", "[::ffff:127.0.0.1]:9"}) {
    EXPECT_TRUE(is_loopback(parse_listen_address(loopback))) << loopback;
  }
  for (const char* network :
       {"0.0.0.0:5000", "[::]:5000", "10.0.0.1:1", "128.0.0.1:1", "[::2]:1", "example.com:1",
        "127.0.0.1.example.com:1", "localhost.example.com:1", "[::ffff:10.0.0.1]:1", "127.1:1"}) {
    EXPECT_FALSE(is_loopback(parse_listen_address(network))) << network;
  }
  // The warning a plaintext server beyond loopback prints: one line, saying how to turn TLS on.
  const std::string warning = plaintext_warning(parse_listen_address("0.0.0.0:5000"), false);
  EXPECT_NE(warning.find("clear text"), std::string::npos) << warning;
  EXPECT_NE(warning.find("--tls-cert"), std::string::npos) << warning;
  EXPECT_EQ(warning.find('\n'), std::string::npos) << warning;
  EXPECT_EQ(plaintext_warning(parse_listen_address("0.0.0.0:5000"), true), "");
  EXPECT_EQ(plaintext_warning(parse_listen_address("[::1]:5000"), false), "");
}

TEST(StepWait, FollowsTheCallDeadlineLessAMarginAndIsCapped) {
  const auto system_now = std::chrono::system_clock::now();
  const auto steady_now = std::chrono::steady_clock::now();
  EXPECT_EQ(step_wait_deadline(system_now + 5s, system_now, steady_now), steady_now + 4800ms);
  EXPECT_EQ(step_wait_deadline(system_now + 1s, system_now, steady_now), steady_now + 900ms);
  EXPECT_EQ(step_wait_deadline(system_now - 1s, system_now, steady_now), steady_now);
  EXPECT_EQ(
      step_wait_deadline(std::chrono::system_clock::time_point::max(), system_now, steady_now),
      steady_now + kMaxStepWait - 200ms);
}

// A call channel's deadline is the trainer's int64 ns (rpc/channel_layout.h): any value is clamped
// to [now, now + kMaxStepWait]. Before, INT64_MIN minus now wrapped around to a wait of about
// 235 years (issue 37, finding 7).
TEST(StepWait, HostileDeadlinesAreClamped) {
  using std::chrono::nanoseconds;
  using std::chrono::system_clock;
  const auto system_now = system_clock::now();
  const auto steady_now = std::chrono::steady_clock::now();
  for (const int64_t ns : {std::numeric_limits<int64_t>::min(),
                           std::numeric_limits<int64_t>::min() + 1, int64_t{-1}, int64_t{0}}) {
    EXPECT_EQ(step_wait_deadline(system_clock::time_point(nanoseconds(ns)), system_now, steady_now),
              steady_now)
        << ns;
  }
  EXPECT_EQ(step_wait_deadline(system_clock::time_point::min(), system_now, steady_now),
            steady_now);
  EXPECT_EQ(step_wait_deadline(system_clock::time_point(nanoseconds(
                                   std::numeric_limits<int64_t>::max())),
                               system_now, steady_now),
            steady_now + kMaxStepWait - 200ms);
  EXPECT_EQ(step_wait_deadline(system_now, system_now, steady_now), steady_now);
}

TEST(StepWait, MissingTrainersAreNamed) {
  EXPECT_EQ(describe_missing_trainers("emb", 12, {1}, 2, 5000ms),
            "step 12 of table 'emb': trainer(s) 1 of 2 did not finish it within 5.00 s");
  EXPECT_EQ(describe_missing_trainers("emb", 0, {0, 3}, 4, 250ms),
            "step 0 of table 'emb': trainer(s) 0, 3 of 4 did not finish it within 250 ms");
  // Thousands missing: sixteen by number, then a count.
  std::vector<int> many(3000);
  for (int i = 0; i < 3000; ++i) many[i] = i + 1;
  EXPECT_EQ(describe_missing_trainers("emb", 0, many, 3001, 250ms),
            "step 0 of table 'emb': trainer(s) 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, "
            "16 and 2984 more of 3001 did not finish it within 250 ms");
}

}  // namespace
}  // namespace gradwire::ps
