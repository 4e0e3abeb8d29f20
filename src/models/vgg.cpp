#include "gradwire/models/vgg.h"

#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include <string>
#include <utility>
#include <vector>

#include "gradwire/common/error.h"
#include "pre_hook.h"

namespace gradwire::models {
namespace {

// The conv output channels of each of the five stages of `cfg`; a 2x2 max-pool ends every stage
// (torchvision's cfgs, with each "M" closing a stage).
std::vector<std::vector<int64_t>> vgg_stages(VggConfig cfg) {
  switch (cfg) {
    case VggConfig::kA:
      return {{64}, {128}, {256, 256}, {512, 512}, {512, 512}};
    case VggConfig::kD:
      return {{64, 64}, {128, 128}, {256, 256, 256}, {512, 512, 512}, {512, 512, 512}};
  }
  throw InvalidArgument("VggOptions::cfg: unknown configuration " +
                        std::to_string(static_cast<int>(cfg)));
}

// torchvision's make_layers(batch_norm=False): conv3x3 + ReLU per channel entry, a 2x2 max-pool
// after each stage.
torch::nn::Sequential make_vgg_features(VggConfig cfg) {
  torch::nn::Sequential features;
  int64_t in_channels = 3;
  for (const std::vector<int64_t>& stage : vgg_stages(cfg)) {
    for (int64_t out_channels : stage) {
      features->push_back(
          torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, out_channels, 3).padding(1)));
      features->push_back(torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)));
      in_channels = out_channels;
    }
    features->push_back(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2).stride(2)));
  }
  return features;
}

}  // namespace

VggImpl::VggImpl(const VggOptions& options) : options_(options) {
  if (options_.num_classes < 1) {
    throw InvalidArgument("VggOptions::num_classes must be >= 1, got " +
                          std::to_string(options_.num_classes));
  }
  if (!(options_.dropout >= 0 && options_.dropout <= 1)) {
    throw InvalidArgument("VggOptions::dropout must be in [0, 1], got " +
                          std::to_string(options_.dropout));
  }
  features_ = register_module("features", make_vgg_features(options_.cfg));
  avgpool_ = register_module("avgpool", torch::nn::AdaptiveAvgPool2d(7));
  auto relu = [] { return torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)); };
  auto dropout = [this] { return torch::nn::Dropout(options_.dropout); };
  classifier_ = register_module(
      "classifier", torch::nn::Sequential(torch::nn::Linear(512 * 7 * 7, 4096), relu(), dropout(),
                                          torch::nn::Linear(4096, 4096), relu(), dropout(),
                                          torch::nn::Linear(4096, options_.num_classes)));

  // torchvision's initialisation (VGG's init_weights).
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* conv = module->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0, torch::kFanOut, torch::kReLU);
      torch::nn::init::zeros_(conv->bias);
    } else if (auto* linear = module->as<torch::nn::Linear>()) {
      torch::nn::init::normal_(linear->weight, /*mean=*/0, /*std=*/0.01);
      torch::nn::init::zeros_(linear->bias);
    }
  }
}

torch::Tensor VggImpl::forward(torch::Tensor x) {
  if (x.dim() != 4 || x.size(1) != 3 || x.size(2) < kVggMinImageSize ||
      x.size(3) < kVggMinImageSize) {
    throw InvalidArgument(
        "VGG expects input of shape [N, 3, H, W] with H, W >= " + std::to_string(kVggMinImageSize) +
        " (five 2x2 max-pools), got " + c10::str(x.sizes()));
  }
  x = detail::forward_layers(features_, std::move(x), pre_hook_);
  x = torch::flatten(avgpool_(x), 1);
  return detail::forward_layers(classifier_, std::move(x), pre_hook_);
}

void VggImpl::set_forward_pre_hook(ForwardPreHook hook) { pre_hook_ = std::move(hook); }

Vgg vgg11(int64_t num_classes) {
  VggOptions options;
  options.cfg = VggConfig::kA;
  options.num_classes = num_classes;
  return Vgg(options);
}

Vgg vgg16(int64_t num_classes) {
  VggOptions options;
  options.cfg = VggConfig::kD;
  options.num_classes = num_classes;
  return Vgg(options);
}

}  // namespace gradwire::models
