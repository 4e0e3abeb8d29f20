#include "gradwire/models/small.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "gradwire/common/error.h"
#include "parameter_count.h"

namespace gradwire::models {
namespace {

using testing::count_parameters;

TEST(Mlp, DefaultShapesAndSize) {
  Mlp model;
  EXPECT_EQ(count_parameters(*model), 784 * 64 + 64 + 64 * 64 + 64 + 64 * 10 + 10);
  EXPECT_LT(count_parameters(*model), 100000);
  // Images are flattened from dim 1.
  auto output = model->forward(torch::randn({4, 1, 28, 28}));
  EXPECT_EQ(output.sizes(), (std::vector<int64_t>{4, 10}));
  output.sum().backward();
  EXPECT_TRUE(model->named_parameters()["layers.0.weight"].grad().defined());
  EXPECT_TRUE(model->named_parameters()["layers.4.bias"].grad().defined());
}

TEST(Mlp, CustomOptions) {
  MlpOptions options;
  options.in_features = 8;
  options.hidden = {};
  options.out_features = 3;
  Mlp linear(options);
  EXPECT_EQ(count_parameters(*linear), 8 * 3 + 3);
  EXPECT_EQ(linear->forward(torch::randn({5, 8})).sizes(), (std::vector<int64_t>{5, 3}));

  options.hidden = {16, 32, 16};
  EXPECT_EQ(Mlp(options)->forward(torch::randn({2, 2, 4})).sizes(), (std::vector<int64_t>{2, 3}));
}

TEST(Mlp, RejectsBadOptionsAndInputs) {
  MlpOptions options;
  options.hidden = {64, 0};
  EXPECT_THROW(Mlp{options}, InvalidArgument);
  options = {};
  options.in_features = 0;
  EXPECT_THROW(Mlp{options}, InvalidArgument);

  Mlp model;
  EXPECT_THROW(model->forward(torch::randn({4, 100})), InvalidArgument);
  EXPECT_THROW(model->forward(torch::randn({784})), InvalidArgument);
}

TEST(SmallCnn, DefaultShapesAndSize) {
  SmallCnn model;
  EXPECT_EQ(count_parameters(*model), 20538);
  auto output = model->forward(torch::randn({4, 1, 28, 28}));
  EXPECT_EQ(output.sizes(), (std::vector<int64_t>{4, 10}));
  output.sum().backward();
  for (const char* name : {"conv1.weight", "bn1.weight", "conv2.weight", "bn2.bias", "fc.weight"}) {
    EXPECT_TRUE(model->named_parameters()[name].grad().defined()) << name;
  }
}

TEST(SmallCnn, CustomOptions) {
  SmallCnnOptions options;
  options.in_channels = 3;
  options.num_classes = 5;
  options.image_size = 30;  // pools to 7x7 (floor)
  SmallCnn model(options);
  EXPECT_EQ(model->named_parameters()["fc.weight"].sizes(), (std::vector<int64_t>{5, 32 * 7 * 7}));
  EXPECT_EQ(model->forward(torch::randn({2, 3, 30, 30})).sizes(), (std::vector<int64_t>{2, 5}));
}

TEST(SmallCnn, RejectsBadOptionsAndInputs) {
  SmallCnnOptions options;
  options.image_size = 3;
  EXPECT_THROW(SmallCnn{options}, InvalidArgument);
  options = {};
  options.num_classes = 0;
  EXPECT_THROW(SmallCnn{options}, InvalidArgument);

  SmallCnn model;
  EXPECT_THROW(model->forward(torch::randn({2, 1, 32, 32})), InvalidArgument);
  EXPECT_THROW(model->forward(torch::randn({2, 3, 28, 28})), InvalidArgument);
  EXPECT_THROW(model->forward(torch::randn({1, 28, 28})), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::models
