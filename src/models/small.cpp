#include "gradwire/models/small.h"

#include <torch/nn/modules/activation.h>

#include <string>
#include <utility>

#include "gradwire/common/error.h"
#include "pre_hook.h"

namespace gradwire::models {
namespace {

void require_positive(int64_t value, const std::string& what) {
  if (value < 1) throw InvalidArgument(what + " must be >= 1, got " + std::to_string(value));
}

}  // namespace

MlpImpl::MlpImpl(MlpOptions options) : options_(std::move(options)) {
  require_positive(options_.in_features, "MlpOptions::in_features");
  require_positive(options_.out_features, "MlpOptions::out_features");
  torch::nn::Sequential layers;
  int64_t features = options_.in_features;
  for (int64_t width : options_.hidden) {
    require_positive(width, "every MlpOptions::hidden size");
    layers->push_back(torch::nn::Linear(features, width));
    layers->push_back(torch::nn::ReLU());
    features = width;
  }
  layers->push_back(torch::nn::Linear(features, options_.out_features));
  layers_ = register_module("layers", layers);
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  int64_t features = 1;
  for (int64_t d = 1; d < x.dim(); ++d) features *= x.size(d);
  if (x.dim() < 2 || features != options_.in_features) {
    throw InvalidArgument("Mlp expects input of shape [N, ...] with " +
                          std::to_string(options_.in_features) + " features per example, got " +
                          c10::str(x.sizes()));
  }
  return detail::forward_layers(layers_, x.flatten(1), pre_hook_);
}

void MlpImpl::set_forward_pre_hook(ForwardPreHook hook) { pre_hook_ = std::move(hook); }

SmallCnnImpl::SmallCnnImpl(SmallCnnOptions options) : options_(options) {
  require_positive(options_.in_channels, "SmallCnnOptions::in_channels");
  require_positive(options_.num_classes, "SmallCnnOptions::num_classes");
  if (options_.image_size < 4) {
    throw InvalidArgument("SmallCnnOptions::image_size must be >= 4 (two 2x2 poolings), got " +
                          std::to_string(options_.image_size));
  }
  auto conv3x3 = [](int64_t in, int64_t out) {
    return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1).bias(false));
  };
  conv1_ = register_module("conv1", conv3x3(options_.in_channels, 16));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(16));
  conv2_ = register_module("conv2", conv3x3(16, 32));
  bn2_ = register_module("bn2", torch::nn::BatchNorm2d(32));
  int64_t pooled = options_.image_size / 2 / 2;
  fc_ = register_module("fc", torch::nn::Linear(32 * pooled * pooled, options_.num_classes));
}

torch::Tensor SmallCnnImpl::forward(torch::Tensor x) {
  if (x.dim() != 4 || x.size(1) != options_.in_channels || x.size(2) != options_.image_size ||
      x.size(3) != options_.image_size) {
    throw InvalidArgument("SmallCnn expects input of shape [N, " +
                          std::to_string(options_.in_channels) + ", " +
                          std::to_string(options_.image_size) + ", " +
                          std::to_string(options_.image_size) + "], got " + c10::str(x.sizes()));
  }
  detail::before_layer(pre_hook_, *conv1_);
  x = conv1_(x);
  detail::before_layer(pre_hook_, *bn1_);
  x = torch::max_pool2d(torch::relu(bn1_(x)), 2);
  detail::before_layer(pre_hook_, *conv2_);
  x = conv2_(x);
  detail::before_layer(pre_hook_, *bn2_);
  x = torch::max_pool2d(torch::relu(bn2_(x)), 2);
  detail::before_layer(pre_hook_, *fc_);
  return fc_(x.flatten(1));
}

void SmallCnnImpl::set_forward_pre_hook(ForwardPreHook hook) { pre_hook_ = std::move(hook); }

}  // namespace gradwire::models
