#include "gradwire/models/zoo.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "gradwire/common/error.h"
#include "gradwire/models/small.h"
#include "hook_recorder.h"

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
                                      "resnext101_32x8d", "vgg11", "vgg16", "mlp", "cnn"}));
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
  EXPECT_EQ(example_shape("vgg16"), (std::vector<int64_t>{3, 224, 224}));
  EXPECT_EQ(example_shape("vgg16", config), (std::vector<int64_t>{3, 64, 64}));
  EXPECT_EQ(num_outputs("vgg16", config), 7);
  // The small models have a fixed size.
  EXPECT_EQ(example_shape("cnn", config), (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(num_outputs("cnn", config), 10);
}

// Each model with and without a forward pre-hook, which make_model's Sequential passes to the model
// inside: for every catalogued model the hook sees layers that hold each parameter once, so a
// waiter per layer covers the whole model.
TEST(Zoo, EveryModelRunsOnItsExampleShapeAndTakesAHook) {
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
    auto input = torch::randn(shape);
    auto output = model->forward(input);
    EXPECT_EQ(output.sizes(), (std::vector<int64_t>{2, num_outputs(name, config)}));

    testing::HookRecorder recorder;
    ASSERT_TRUE(set_forward_pre_hook(model, recorder.hook()));
    EXPECT_EQ(model->forward(input).sizes(), output.sizes());
    EXPECT_FALSE(recorder.layers().empty());
    EXPECT_EQ(recorder.parameters_not_covered_once(*model), std::vector<std::string>{});
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
  EXPECT_THROW(example_shape("densenet121"), InvalidArgument);
  EXPECT_THROW(num_outputs(""), InvalidArgument);
}

TEST(Zoo, RejectsUnusableConfig) {
  ModelConfig config;
  config.num_classes = 0;
  EXPECT_THROW(make_model("resnet18", config), InvalidArgument);
  config = {};
  config.image_size = 0;
  EXPECT_THROW(example_shape("resnet18", config), InvalidArgument);
  EXPECT_THROW(make_model("vgg11", config), InvalidArgument);
}

TEST(Zoo, VggNeedsImagesOfAtLeast32) {
  ModelConfig config;
  config.image_size = 31;
  config.num_classes = 10;
  EXPECT_EQ(example_shape("resnet18", config), (std::vector<int64_t>{3, 31, 31}));
  for (const char* name : {"vgg11", "vgg16"}) {
    SCOPED_TRACE(name);
    try {
      make_model(name, config);
      FAIL() << "expected InvalidArgument";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("image_size >= 32"), std::string::npos) << e.what();
    }
    EXPECT_THROW(example_shape(name, config), InvalidArgument);
    EXPECT_THROW(num_outputs(name, config), InvalidArgument);
  }
  config.image_size = 32;
  EXPECT_EQ(example_shape("vgg11", config), (std::vector<int64_t>{3, 32, 32}));
}

TEST(Zoo, HookedLayersAreNamedUnderTheWrapper) {
  torch::nn::Sequential mlp = make_model("mlp");
  testing::HookRecorder recorder;
  ASSERT_TRUE(set_forward_pre_hook(mlp, recorder.hook()));
  mlp->forward(torch::randn({1, 784}));
  EXPECT_EQ(recorder.names_in(*mlp),
            (std::vector<std::string>{"0.layers.0", "0.layers.2", "0.layers.4"}));
  // An empty hook removes it.
  ASSERT_TRUE(set_forward_pre_hook(mlp, nullptr));
  mlp->forward(torch::randn({1, 784}));
  EXPECT_EQ(recorder.layers().size(), 3u);
}

TEST(Zoo, SetForwardPreHookRefusesOtherSequentials) {
  int calls = 0;
  ForwardPreHook hook = [&calls](const torch::nn::Module&) { ++calls; };
  torch::nn::Sequential null{nullptr};
  EXPECT_FALSE(set_forward_pre_hook(null, hook));
  torch::nn::Sequential empty;
  EXPECT_FALSE(set_forward_pre_hook(empty, hook));
  torch::nn::Sequential linear(torch::nn::Linear(4, 2));
  EXPECT_FALSE(set_forward_pre_hook(linear, hook));
  torch::nn::Sequential two(Mlp{}, torch::nn::ReLU{});
  EXPECT_FALSE(set_forward_pre_hook(two, hook));
  two->forward(torch::randn({1, 784}));
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace gradwire::models
