#include "gradwire/models/resnet.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <string>

#include "gradwire/common/error.h"
#include "parameter_count.h"

namespace gradwire::models {
namespace {

using testing::count_parameters;

TEST(ResNet, ParameterCountsMatchTorchvision) {
  struct Case {
    std::string name;
    std::function<ResNet()> make;
    int64_t parameters;
  };
  const std::vector<Case> cases = {
      {"resnet18", [] { return resnet18(); }, 11689512},
      {"resnet50", [] { return resnet50(); }, 25557032},
      {"resnet101", [] { return resnet101(); }, 44549160},
      {"resnext50_32x4d", [] { return resnext50_32x4d(); }, 25028904},
      {"resnext101_32x8d", [] { return resnext101_32x8d(); }, 88791336},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(count_parameters(*c.make()), c.parameters);
  }
}

TEST(ResNet, ForwardShapeOnSmallImages) {
  torch::NoGradGuard no_grad;
  auto input = torch::randn({2, 3, 64, 64});
  for (ResNet model : {resnet18(), resnext50_32x4d()}) {
    auto output = model->forward(input);
    EXPECT_EQ(output.sizes(), (std::vector<int64_t>{2, 1000}));
    EXPECT_TRUE(torch::isfinite(output).all().item<bool>());
  }
}

TEST(ResNet, NumClassesSizesTheClassifier) {
  ResNet model = resnet18(10);
  EXPECT_EQ(model->named_parameters()["fc.weight"].sizes(), (std::vector<int64_t>{10, 512}));
  model->eval();
  torch::NoGradGuard no_grad;
  EXPECT_EQ(model->forward(torch::randn({1, 3, 32, 32})).sizes(), (std::vector<int64_t>{1, 10}));
}

TEST(ResNet, ParameterNamesFollowTorchvision) {
  auto resnet50_parameters = resnet50()->named_parameters();
  for (const char* name :
       {"conv1.weight", "bn1.weight", "bn1.bias", "layer1.0.conv1.weight", "layer1.0.bn3.bias",
        "layer1.0.downsample.0.weight", "layer1.0.downsample.1.weight", "layer2.3.conv2.weight",
        "layer4.2.conv3.weight", "fc.weight", "fc.bias"}) {
    EXPECT_TRUE(resnet50_parameters.contains(name)) << name;
  }
  EXPECT_FALSE(resnet50_parameters.contains("layer1.1.downsample.0.weight"));
  EXPECT_EQ(resnet50_parameters["layer1.0.downsample.0.weight"].sizes(),
            (std::vector<int64_t>{256, 64, 1, 1}));

  ResNet model = resnet18();
  auto parameters = model->named_parameters();
  EXPECT_FALSE(parameters.contains("layer1.0.downsample.0.weight"));  // shapes already match
  EXPECT_TRUE(parameters.contains("layer2.0.downsample.0.weight"));
  EXPECT_TRUE(model->named_buffers().contains("layer1.1.bn2.running_var"));
  // ResNeXt 32x4d: the first stage's grouped 3x3 conv has 128 channels in 32 groups.
  EXPECT_EQ(resnext50_32x4d()->named_parameters()["layer1.0.conv2.weight"].sizes(),
            (std::vector<int64_t>{128, 4, 3, 3}));
}

TEST(ResNet, InitialisationFollowsTorchvision) {
  auto parameters = resnet18()->named_parameters();
  // kaiming_normal_, fan_out, ReLU: std = sqrt(2 / (64 * 7 * 7)).
  double measured = parameters["conv1.weight"].std().item<double>();
  EXPECT_NEAR(measured, std::sqrt(2.0 / (64 * 7 * 7)), 0.1 * measured);
  EXPECT_TRUE(parameters["layer3.1.bn2.weight"].eq(1).all().item<bool>());
  EXPECT_TRUE(parameters["layer3.1.bn2.bias"].eq(0).all().item<bool>());
}

TEST(ResNet, ZeroInitResidualZeroesTheLastNormOfEachBlock) {
  ResNetOptions options;
  options.zero_init_residual = true;
  auto basic = ResNet(options)->named_parameters();
  EXPECT_TRUE(basic["layer1.0.bn2.weight"].eq(0).all().item<bool>());
  EXPECT_TRUE(basic["layer1.0.bn1.weight"].eq(1).all().item<bool>());
  EXPECT_TRUE(basic["bn1.weight"].eq(1).all().item<bool>());

  options.block = BlockKind::kBottleneck;
  options.layers = {1, 1, 1, 1};
  auto bottleneck = ResNet(options)->named_parameters();
  EXPECT_TRUE(bottleneck["layer4.0.bn3.weight"].eq(0).all().item<bool>());
  EXPECT_TRUE(bottleneck["layer4.0.bn2.weight"].eq(1).all().item<bool>());
  EXPECT_TRUE(bottleneck["layer4.0.downsample.1.weight"].eq(1).all().item<bool>());
}

TEST(ResNet, RejectsBadOptionsAndInputs) {
  ResNetOptions grouped_basic;
  grouped_basic.groups = 32;
  EXPECT_THROW(ResNet{grouped_basic}, InvalidArgument);
  ResNetOptions empty_stage;
  empty_stage.layers = {2, 0, 2, 2};
  EXPECT_THROW(ResNet{empty_stage}, InvalidArgument);
  ResNetOptions no_classes;
  no_classes.num_classes = 0;
  EXPECT_THROW(ResNet{no_classes}, InvalidArgument);

  ResNet model = resnet18(10);
  EXPECT_THROW(model->forward(torch::randn({3, 32, 32})), InvalidArgument);
  EXPECT_THROW(model->forward(torch::randn({1, 1, 32, 32})), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::models
