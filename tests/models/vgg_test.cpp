#include "gradwire/models/vgg.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "gradwire/common/error.h"
#include "parameter_count.h"

namespace gradwire::models {
namespace {

using testing::count_parameters;

// "<prefix>.<i>.weight" and "<prefix>.<i>.bias" for each index, in order.
std::vector<std::string> weights_and_biases(const std::string& prefix,
                                            const std::vector<int>& indices) {
  std::vector<std::string> names;
  for (int index : indices) {
    names.push_back(prefix + "." + std::to_string(index) + ".weight");
    names.push_back(prefix + "." + std::to_string(index) + ".bias");
  }
  return names;
}

double dropout_of(const Vgg& model, const std::string& name) {
  return model->named_modules()[name]->as<torch::nn::Dropout>()->options.p();
}

// Each VGG is built once per test: the classifier's 124M parameters take a second or more to
// initialise.
TEST(Vgg, Vgg11MatchesTorchvision) {
  Vgg model = vgg11();
  EXPECT_EQ(count_parameters(*model), 132863336);
  // Indices count the ReLUs (after each conv) and the max-pools (after each stage) too.
  std::vector<std::string> names = weights_and_biases("features", {0, 3, 6, 8, 11, 13, 16, 18});
  std::vector<std::string> classifier = weights_and_biases("classifier", {0, 3, 6});
  names.insert(names.end(), classifier.begin(), classifier.end());
  EXPECT_EQ(model->named_parameters().keys(), names);

  auto parameters = model->named_parameters();
  EXPECT_EQ(parameters["features.0.weight"].sizes(), (std::vector<int64_t>{64, 3, 3, 3}));
  EXPECT_EQ(parameters["features.18.weight"].sizes(), (std::vector<int64_t>{512, 512, 3, 3}));
  EXPECT_EQ(parameters["classifier.0.weight"].sizes(), (std::vector<int64_t>{4096, 512 * 7 * 7}));
  EXPECT_EQ(parameters["classifier.6.weight"].sizes(), (std::vector<int64_t>{1000, 4096}));

  // torchvision's initialisation. Convs: kaiming_normal_, fan_out, ReLU, so the first one's std is
  // sqrt(2 / (64 * 3 * 3)). Linears: normal(0, 0.01). Biases 0.
  double conv_std = parameters["features.0.weight"].std().item<double>();
  EXPECT_NEAR(conv_std, std::sqrt(2.0 / (64 * 3 * 3)), 0.1 * conv_std);
  EXPECT_NEAR(parameters["classifier.3.weight"].std().item<double>(), 0.01, 0.001);
  EXPECT_NEAR(parameters["classifier.3.weight"].mean().item<double>(), 0, 0.001);
  for (const char* bias :
       {"features.0.bias", "features.18.bias", "classifier.0.bias", "classifier.6.bias"}) {
    EXPECT_TRUE(parameters[bias].eq(0).all().item<bool>()) << bias;
  }

  // torchvision's dropout by default.
  EXPECT_EQ(model->options().dropout, 0.5);
  EXPECT_EQ(dropout_of(model, "classifier.2"), 0.5);
  EXPECT_EQ(dropout_of(model, "classifier.5"), 0.5);
}

TEST(Vgg, Vgg16MatchesTorchvision) {
  Vgg model = vgg16();
  EXPECT_EQ(count_parameters(*model), 138357544);
  std::vector<std::string> names =
      weights_and_biases("features", {0, 2, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28});
  std::vector<std::string> classifier = weights_and_biases("classifier", {0, 3, 6});
  names.insert(names.end(), classifier.begin(), classifier.end());
  EXPECT_EQ(model->named_parameters().keys(), names);
}

TEST(Vgg, ForwardOnSmallImages) {
  VggOptions options;
  options.num_classes = 10;
  options.dropout = 0;
  Vgg model(options);
  EXPECT_EQ(dropout_of(model, "classifier.2"), 0);
  EXPECT_EQ(dropout_of(model, "classifier.5"), 0);
  ASSERT_TRUE(model->is_training());
  auto input = torch::randn({2, 3, 32, 32});
  auto output = model->forward(input);
  EXPECT_EQ(output.sizes(), (std::vector<int64_t>{2, 10}));
  EXPECT_TRUE(torch::isfinite(output).all().item<bool>());
  // Without dropout, training mode is deterministic.
  EXPECT_TRUE(torch::equal(model->forward(input), output));
  output.sum().backward();
  EXPECT_TRUE(model->named_parameters()["features.0.weight"].grad().defined());

  torch::NoGradGuard no_grad;
  EXPECT_EQ(model->forward(torch::randn({1, 3, 33, 40})).sizes(), (std::vector<int64_t>{1, 10}));
  EXPECT_THROW(model->forward(torch::randn({3, 32, 32})), InvalidArgument);
  EXPECT_THROW(model->forward(torch::randn({1, 1, 32, 32})), InvalidArgument);
  try {
    model->forward(torch::randn({1, 3, 32, 31}));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("H, W >= 32"), std::string::npos) << e.what();
  }
}

TEST(Vgg, RejectsBadOptions) {
  VggOptions options;
  options.num_classes = 0;
  EXPECT_THROW(Vgg{options}, InvalidArgument);
  for (double dropout : {-0.1, 1.5, std::nan("")}) {
    options = {};
    options.dropout = dropout;
    EXPECT_THROW(Vgg{options}, InvalidArgument) << dropout;
  }
}

}  // namespace
}  // namespace gradwire::models
