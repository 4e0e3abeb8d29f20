#include "gradwire/models/zoo.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "gradwire/common/error.h"

namespace gradwire::models {
namespace {

std::vector<std::string> catalog_names() {
  std::vector<std::string> names;
  for (const ModelInfo& info : model_catalog()) names.push_back(info.name);
  return names;
}

TEST(Zoo, CatalogListsTheModels) {
  EXPECT_EQ(catalog_names(),
            (std::vector<std::string>{"resnet18", "resnet50", "resnet101", "resnext50_32x4d",
                                      "resnext101_32x8d", "mlp", "cnn"}));
  for (const ModelInfo& info : model_catalog()) {
    EXPECT_FALSE(info.description.empty()) << info.name;
    EXPECT_EQ(info.image, info.name != "mlp") << info.name;
  }
}

TEST(Zoo, DefaultShapes) {
  EXPECT_EQ(example_shape("resnet50"), (std::vector<int64_t>{3, 224, 224}));
  EXPECT_EQ(num_outputs("resnet50"), 1000);
  EXPECT_EQ(example_shape("mlp"), (std::vector<int64_t>{784}));
  EXPECT_EQ(num_outputs("mlp"), 10);
  EXPECT_EQ(example_shape("cnn"), (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(num_outputs("cnn"), 10);
  ModelConfig config;
  config.image_size = 64;
  config.num_classes = 7;
  EXPECT_EQ(example_shape("resnext50_32x4d", config), (std::vector<int64_t>{3, 64, 64}));
  EXPECT_EQ(num_outputs("resnext50_32x4d", config), 7);
  // The small models have a fixed size.
  EXPECT_EQ(example_shape("cnn", config), (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(num_outputs("cnn", config), 10);
}

TEST(Zoo, EveryModelBuildsAndRunsOnItsExampleShape) {
  ModelConfig config;
  config.image_size = 32;
  config.num_classes = 10;
  torch::NoGradGuard no_grad;
  for (const std::string& name : catalog_names()) {
    SCOPED_TRACE(name);
    torch::nn::Sequential model = make_model(name, config);
    ASSERT_EQ(model->size(), 1u);
    EXPECT_TRUE(model->is_training());
    std::vector<int64_t> shape = {2};  // 2: BatchNorm needs two values per channel in training
    for (int64_t size : example_shape(name, config)) shape.push_back(size);
    auto output = model->forward(torch::randn(shape));
    EXPECT_EQ(output.sizes(), (std::vector<int64_t>{2, num_outputs(name, config)}));
  }
}

TEST(Zoo, ParametersAreNamedUnderTheWrapper) {
  auto parameters = make_model("resnet18")->named_parameters();
  EXPECT_TRUE(parameters.contains("0.conv1.weight"));
  EXPECT_TRUE(parameters.contains("0.fc.bias"));
}

TEST(Zoo, UnknownNameListsKnownNames) {
  try {
    make_model("resnet1000");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("'resnet1000'"), std::string::npos) << what;
    for (const std::string& name : catalog_names()) {
      EXPECT_NE(what.find(name), std::string::npos) << what;
    }
  }
  EXPECT_THROW(example_shape("vgg16"), InvalidArgument);
  EXPECT_THROW(num_outputs(""), InvalidArgument);
}

TEST(Zoo, RejectsUnusableConfig) {
  ModelConfig config;
  config.num_classes = 0;
  EXPECT_THROW(make_model("resnet18", config), InvalidArgument);
  config = {};
  config.image_size = 0;
  EXPECT_THROW(example_shape("resnet18", config), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::models
