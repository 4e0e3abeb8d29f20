// A parameter that takes no part in forward, without find_unused_parameters: backward must fail
// (on every rank, none hangs) with an InvalidArgument naming the parameters and the option.
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ostream>

#include "gradwire/common/error.h"
#include "gradwire/ddp/ddp.h"
#include "reference_training.h"
#include "test_models.h"

namespace gradwire::ddp::testing {
namespace {

struct Outcome {
  std::string kind = "no exception";
  std::string message;
};

struct UnusedCase {
  int world;
  bool tiny_buckets;  // several buckets: some may be launched before the failure
};

void PrintTo(const UnusedCase& c, std::ostream* os) {
  *os << "world " << c.world << (c.tiny_buckets ? ", tiny buckets" : "");
}

class UnusedWithoutFindUnused : public ::testing::TestWithParam<UnusedCase> {};

TEST_P(UnusedWithoutFindUnused, BackwardThrowsNamingTheUnusedParameters) {
  torch::set_num_threads(1);
  const int world = GetParam().world;
  auto batches = make_batches(1, 4 * world, {8}, 4, 41);
  auto replicas = make_replicas(world, [] { return UnusedBranch(); });
  DdpOptions options;
  ASSERT_FALSE(options.find_unused_parameters);
  if (GetParam().tiny_buckets) {
    options.bucket_cap_mb = 0.0001;
    options.first_bucket_mb = 0.0001;
  }
  std::vector<Outcome> outcomes(world);
  gradwire::testing::run_ranks(
      world,
      [&](int rank, World& w) {
        DistributedDataParallel<UnusedBranchImpl> ddp(replicas[rank], w.communicator(), options);
        auto output = ddp(rank_chunk(batches[0].input, rank, world));
        auto loss = torch::mse_loss(output, rank_chunk(batches[0].target, rank, world));
        auto& outcome = outcomes[rank];
        try {
          loss.backward();
        } catch (const InvalidArgument& e) {
          outcome = {"gradwire::InvalidArgument", e.what()};
        } catch (const Error& e) {
          outcome = {"gradwire::Error", e.what()};
        } catch (const c10::Error& e) {
          outcome = {"c10::Error", e.what()};
        } catch (const std::exception& e) {
          outcome = {"std::exception", e.what()};
        }
      },
      std::chrono::seconds(20));
  for (int r = 0; r < world; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& outcome = outcomes[r];
    EXPECT_EQ(outcome.kind, "gradwire::InvalidArgument") << outcome.message;
    EXPECT_NE(outcome.message.find("unused.weight"), std::string::npos) << outcome.message;
    EXPECT_NE(outcome.message.find("unused.bias"), std::string::npos) << outcome.message;
    EXPECT_NE(outcome.message.find("find_unused_parameters"), std::string::npos) << outcome.message;
    EXPECT_EQ(outcome.message.find("fc1.weight"), std::string::npos) << outcome.message;
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, UnusedWithoutFindUnused,
                         ::testing::Values(UnusedCase{1, false}, UnusedCase{2, false},
                                           UnusedCase{2, true}),
                         [](const auto& info) {
                           return "world" + std::to_string(info.param.world) +
                                  (info.param.tiny_buckets ? "_tiny_buckets" : "");
                         });

}  // namespace
}  // namespace gradwire::ddp::testing
