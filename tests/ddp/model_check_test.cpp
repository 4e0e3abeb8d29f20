// The cross-rank model check: describe_model's lines, find_model_mismatch's messages, and
// DistributedDataParallel refusing models that differ across ranks (on every rank).
#include "ddp/model_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gradwire/common/error.h"
#include "gradwire/ddp/ddp.h"
#include "support/rank_threads.h"

namespace gradwire::ddp {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using Descriptions = std::vector<std::vector<std::string>>;

const std::vector<std::string> kModel = {
    "parameter fc1.weight Float [16, 8]", "parameter fc1.bias Float [16]",
    "parameter fc2.weight Float [4, 16]", "parameter fc2.bias Float [4]"};

TEST(FindModelMismatch, AllEqualIsNullopt) {
  EXPECT_EQ(find_model_mismatch({kModel, kModel, kModel}), std::nullopt);
  EXPECT_EQ(find_model_mismatch({kModel}), std::nullopt);
  EXPECT_EQ(find_model_mismatch({{}, {}}), std::nullopt);
}

TEST(FindModelMismatch, ShapeDifferenceNamesEntryRankZeroAndTheDifferingRank) {
  auto other = kModel;
  other[2] = "parameter fc2.weight Float [5, 16]";
  auto message = find_model_mismatch({kModel, kModel, other});
  ASSERT_TRUE(message.has_value());
  EXPECT_THAT(*message, HasSubstr("fc2.weight"));
  EXPECT_THAT(*message, HasSubstr(kModel[2]));  // rank 0's entry
  EXPECT_THAT(*message, HasSubstr("rank 2"));
  EXPECT_THAT(*message, HasSubstr("[5, 16]"));  // what rank 2 has
  EXPECT_THAT(*message, Not(HasSubstr("rank 1")));
}

TEST(FindModelMismatch, ReportsTheFirstDifference) {
  auto other = kModel;
  other[1] = "parameter fc1.bias Double [16]";
  other[3] = "parameter fc2.bias Float [7]";
  auto message = find_model_mismatch({kModel, other});
  ASSERT_TRUE(message.has_value());
  EXPECT_THAT(*message, HasSubstr("fc1.bias"));
  EXPECT_THAT(*message, HasSubstr("Double"));
  EXPECT_THAT(*message, HasSubstr("rank 1"));
}

TEST(FindModelMismatch, FewerEntriesOnOneRank) {
  auto shorter = kModel;
  shorter.pop_back();
  auto message = find_model_mismatch({kModel, shorter, kModel});
  ASSERT_TRUE(message.has_value());
  EXPECT_THAT(*message, HasSubstr("rank 1"));
  EXPECT_THAT(*message, Not(HasSubstr("rank 2")));
}

TEST(FindModelMismatch, MoreEntriesOnOneRank) {
  auto longer = kModel;
  longer.push_back("buffer extra Float [1]");
  auto message = find_model_mismatch({kModel, kModel, longer});
  ASSERT_TRUE(message.has_value());
  EXPECT_THAT(*message, HasSubstr("rank 2"));
}

struct DescribedImpl : torch::nn::Module {
  DescribedImpl()
      : fc(register_module("fc", torch::nn::Linear(20, 10))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))) {
    scale = register_parameter("scale", torch::ones({3}, torch::kDouble));
    frozen = register_parameter("frozen", torch::zeros({2, 2}), /*requires_grad=*/false);
  }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
  torch::Tensor scale;
  torch::Tensor frozen;
};
TORCH_MODULE(Described);

TEST(DescribeModel, ParametersAndBuffersWithDtypeAndShape) {
  Described model;
  auto lines = describe_model(*model);
  ASSERT_EQ(lines.size(), 9u) << ::testing::PrintToString(lines);
  EXPECT_THAT(lines, ::testing::IsSupersetOf({
                         "parameter scale Double [3]",
                         "parameter frozen Float [2, 2]",  // listed even without requires_grad
                         "parameter fc.weight Float [10, 20]",
                         "parameter fc.bias Float [10]",
                         "parameter bn.weight Float [16]",
                         "parameter bn.bias Float [16]",
                         "buffer bn.running_mean Float [16]",
                         "buffer bn.running_var Float [16]",
                     }));
  const bool has_counter = std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("buffer bn.num_batches_tracked Long", 0) == 0;
  });
  EXPECT_TRUE(has_counter) << ::testing::PrintToString(lines);
  // Registration order within parameters and within buffers.
  auto index_of = [&](const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) - lines.begin();
  };
  EXPECT_LT(index_of("parameter fc.weight Float [10, 20]"),
            index_of("parameter fc.bias Float [10]"));
  EXPECT_LT(index_of("parameter fc.bias Float [10]"), index_of("parameter bn.weight Float [16]"));
  EXPECT_LT(index_of("buffer bn.running_mean Float [16]"),
            index_of("buffer bn.running_var Float [16]"));
}

struct TwoLayerImpl : torch::nn::Module {
  explicit TwoLayerImpl(int64_t hidden)
      : fc1(register_module("fc1", torch::nn::Linear(4, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, 2))) {}
  torch::Tensor forward(const torch::Tensor& x) { return fc2->forward(fc1->forward(x)); }
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};
TORCH_MODULE(TwoLayer);

TEST(DdpModelCheck, DifferentShapeOnRankOneThrowsOnBothRanks) {
  // Built on the main thread: rank 1's hidden layer is wider.
  std::vector<TwoLayer> models = {TwoLayer(5), TwoLayer(6)};
  std::vector<std::string> messages(2);
  // One byte per rank: std::vector<bool> packs bits, and two threads writing neighbouring bits
  // of one word race.
  std::vector<char> threw_invalid_argument(2, 0);
  gradwire::testing::run_ranks(
      2,
      [&](int rank, World& w) {
        try {
          DistributedDataParallel<TwoLayerImpl> ddp(models[rank], w.communicator());
        } catch (const InvalidArgument& e) {
          threw_invalid_argument[rank] = 1;
          messages[rank] = e.what();
        }
      },
      std::chrono::seconds(20));
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_TRUE(threw_invalid_argument[rank] != 0);
    EXPECT_THAT(messages[rank], HasSubstr("fc1.weight"));
    EXPECT_THAT(messages[rank], HasSubstr("rank 1"));
  }
  EXPECT_EQ(messages[0], messages[1]);
}

TEST(DdpModelCheck, DifferentBucketCapsOnRankOneThrowOnBothRanks) {
  std::vector<TwoLayer> models = {TwoLayer(5), TwoLayer(5)};
  std::vector<std::string> messages(2);
  gradwire::testing::run_ranks(
      2,
      [&](int rank, World& w) {
        DdpOptions options;
        options.bucket_cap_mb = rank == 0 ? 25 : 4;  // as GRADWIRE_BUCKET_CAP_MB set on one host
        try {
          DistributedDataParallel<TwoLayerImpl> ddp(models[rank], w.communicator(), options);
        } catch (const InvalidArgument& e) {
          messages[rank] = e.what();
        }
      },
      std::chrono::seconds(20));
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_THAT(messages[rank], HasSubstr("options differ"));
    EXPECT_THAT(messages[rank], HasSubstr("'option bucket_cap_mb 25'"));
    EXPECT_THAT(messages[rank], HasSubstr("rank 1 has 'option bucket_cap_mb 4'"));
    EXPECT_THAT(messages[rank], HasSubstr("GRADWIRE_BUCKET_CAP_MB"));
  }
}

TEST(DescribeOptions, NamesWhatShapesCommunication) {
  DdpOptions options;
  options.bucket_cap_mb = 0.5;
  options.first_bucket_mb = 1;
  options.find_unused_parameters = true;
  EXPECT_THAT(describe_options(options),
              ::testing::ElementsAre("option bucket_cap_mb 0.5", "option first_bucket_mb 1",
                                     "option broadcast_buffers true",
                                     "option find_unused_parameters true",
                                     "option static_graph false"));
  // The mismatch of an option line says so.
  auto other = describe_options(options);
  other[0] = "option bucket_cap_mb 2";
  auto message = find_model_mismatch({describe_options(options), other});
  ASSERT_TRUE(message);
  EXPECT_THAT(*message, HasSubstr("options differ across ranks at entry 0"));
}

TEST(ResolveDdpOptions, OptionThenEnvironmentThenDefault) {
  DdpOptions options;
  auto resolved = resolve(options, EnvMap());
  EXPECT_EQ(resolved.bucket_cap_mb, 25.0);
  EXPECT_EQ(resolved.first_bucket_mb, 1.0);
  resolved = resolve(options, EnvMap({{"GRADWIRE_BUCKET_CAP_MB", "4"},
                                      {"GRADWIRE_FIRST_BUCKET_MB", "0.25"}}));
  EXPECT_EQ(resolved.bucket_cap_mb, 4.0);
  EXPECT_EQ(resolved.first_bucket_mb, 0.25);
  options.bucket_cap_mb = 8;
  EXPECT_EQ(resolve(options, EnvMap({{"GRADWIRE_BUCKET_CAP_MB", "4"}})).bucket_cap_mb, 8.0);
  EXPECT_THROW(resolve(DdpOptions{}, EnvMap({{"GRADWIRE_BUCKET_CAP_MB", "big"}})), ConfigError);
}

}  // namespace
}  // namespace gradwire::ddp
