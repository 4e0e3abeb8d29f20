// The forward pre-hooks of the models (gradwire/models/hooks.h): the layers each model reports,
// in forward order, cover every parameter once, and run after their hook returns.
#include "gradwire/models/hooks.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "gradwire/models/resnet.h"
#include "gradwire/models/small.h"
#include "gradwire/models/vgg.h"
#include "hook_recorder.h"

namespace gradwire::models {
namespace {

using testing::HookRecorder;

// "<prefix><i>" for i in [0, count).
std::vector<std::string> numbered(const std::string& prefix, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back(prefix + std::to_string(i));
  return names;
}

Vgg vgg11_without_dropout(int64_t num_classes) {
  VggOptions options;
  options.num_classes = num_classes;
  options.dropout = 0;
  return Vgg(options);
}

TEST(ForwardPreHook, ResNetReportsStemBlocksAndClassifier) {
  ResNet model = resnet18(10);
  HookRecorder recorder;
  model->set_forward_pre_hook(recorder.hook());
  model->forward(torch::randn({2, 3, 32, 32}));

  std::vector<std::string> expected = {"conv1", "bn1"};
  for (const char* stage : {"layer1.", "layer2.", "layer3.", "layer4."}) {
    for (const std::string& block : numbered(stage, 2)) expected.push_back(block);
  }
  expected.push_back("fc");
  EXPECT_EQ(recorder.names_in(*model), expected);
  EXPECT_EQ(recorder.parameters_not_covered_once(*model), std::vector<std::string>{});
}

TEST(ForwardPreHook, BottleneckResNetReportsEachBlockOnce) {
  ResNetOptions options;
  options.block = BlockKind::kBottleneck;
  options.layers = {1, 2, 1, 1};
  options.num_classes = 10;
  ResNet model(options);
  HookRecorder recorder;
  model->set_forward_pre_hook(recorder.hook());
  model->forward(torch::randn({2, 3, 32, 32}));
  EXPECT_EQ(recorder.names_in(*model),
            (std::vector<std::string>{"conv1", "bn1", "layer1.0", "layer2.0", "layer2.1",
                                      "layer3.0", "layer4.0", "fc"}));
  EXPECT_EQ(recorder.parameters_not_covered_once(*model), std::vector<std::string>{});
}

TEST(ForwardPreHook, VggReportsConvsAndLinears) {
  Vgg model = vgg11_without_dropout(10);
  HookRecorder recorder;
  model->set_forward_pre_hook(recorder.hook());
  model->forward(torch::randn({2, 3, 32, 32}));
  EXPECT_EQ(recorder.names_in(*model),
            (std::vector<std::string>{"features.0", "features.3", "features.6", "features.8",
                                      "features.11", "features.13", "features.16", "features.18",
                                      "classifier.0", "classifier.3", "classifier.6"}));
  EXPECT_EQ(recorder.parameters_not_covered_once(*model), std::vector<std::string>{});
}

TEST(ForwardPreHook, SmallModelsReportTheirLayers) {
  Mlp mlp;
  HookRecorder mlp_recorder;
  mlp->set_forward_pre_hook(mlp_recorder.hook());
  mlp->forward(torch::randn({2, 784}));
  EXPECT_EQ(mlp_recorder.names_in(*mlp),
            (std::vector<std::string>{"layers.0", "layers.2", "layers.4"}));
  EXPECT_EQ(mlp_recorder.parameters_not_covered_once(*mlp), std::vector<std::string>{});

  SmallCnn cnn;
  HookRecorder cnn_recorder;
  cnn->set_forward_pre_hook(cnn_recorder.hook());
  cnn->forward(torch::randn({2, 1, 28, 28}));
  EXPECT_EQ(cnn_recorder.names_in(*cnn),
            (std::vector<std::string>{"conv1", "bn1", "conv2", "bn2", "fc"}));
  EXPECT_EQ(cnn_recorder.parameters_not_covered_once(*cnn), std::vector<std::string>{});
}

// What a parameter-server client does: the model starts without its values, and each layer's
// parameters arrive in its hook. The result equals that of the model with every value in place,
// which holds only if each layer runs after its hook.
template <typename Holder>
void expect_values_set_in_the_hook_are_used(Holder source, Holder target,
                                            const torch::Tensor& input) {
  torch::NoGradGuard no_grad;
  auto source_modules = source->named_modules("", /*include_self=*/false);
  auto target_modules = target->named_modules("", /*include_self=*/false);
  for (auto& parameter : target->parameters()) parameter.zero_();
  target->set_forward_pre_hook([&](const torch::nn::Module& layer) {
    for (const auto& item : target_modules) {
      if (item.value().get() != &layer) continue;
      std::vector<torch::Tensor> from = source_modules[item.key()]->parameters();
      std::vector<torch::Tensor> to = layer.parameters();
      ASSERT_EQ(from.size(), to.size()) << item.key();
      for (size_t i = 0; i < to.size(); ++i) to[i].copy_(from[i]);
      return;
    }
    FAIL() << "the hook saw a layer that is not the model's";
  });
  torch::Tensor expected = source->forward(input);
  EXPECT_TRUE(torch::allclose(target->forward(input), expected));
  for (const auto& item : source->named_parameters()) {
    EXPECT_TRUE(torch::equal(target->named_parameters()[item.key()], item.value())) << item.key();
  }
}

TEST(ForwardPreHook, LayersRunWithTheValuesTheirHookSet) {
  auto image = torch::randn({2, 3, 32, 32});
  expect_values_set_in_the_hook_are_used(resnet18(10), resnet18(10), image);
  expect_values_set_in_the_hook_are_used(vgg11_without_dropout(10), vgg11_without_dropout(10),
                                         image);
  expect_values_set_in_the_hook_are_used(SmallCnn(), SmallCnn(), torch::randn({2, 1, 28, 28}));
  expect_values_set_in_the_hook_are_used(Mlp(), Mlp(), torch::randn({2, 784}));
}

TEST(ForwardPreHook, AnExceptionFromTheHookLeavesForward) {
  Mlp model;
  int calls = 0;
  model->set_forward_pre_hook([&calls](const torch::nn::Module&) {
    if (++calls == 2) throw std::runtime_error("parameters did not arrive");
  });
  EXPECT_THROW(model->forward(torch::randn({1, 784})), std::runtime_error);
  EXPECT_EQ(calls, 2);
}

TEST(ForwardPreHook, AnEmptyHookRemovesTheHook) {
  ResNet model = resnet18(10);
  HookRecorder recorder;
  model->set_forward_pre_hook(recorder.hook());
  model->set_forward_pre_hook(nullptr);
  auto output = model->forward(torch::randn({2, 3, 32, 32}));
  EXPECT_EQ(output.sizes(), (std::vector<int64_t>{2, 10}));
  EXPECT_TRUE(recorder.layers().empty());
}

}  // namespace
}  // namespace gradwire::models
