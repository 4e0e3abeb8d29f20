// Small models for fast tests and examples: a multi-layer perceptron and a two-conv CNN.
// With their default options both have fewer than 100k parameters and run a forward pass on a
// small batch in well under a millisecond, so multi-rank tests can train them for real.
//
// Thread safety: as any torch::nn::Module; concurrent forward() calls on one SmallCnn in training
// mode race on the BatchNorm running statistics, and set_forward_pre_hook must not race with
// forward(). See docs/models.md.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "gradwire/models/hooks.h"

namespace gradwire::models {

struct MlpOptions {
  // Features of one (flattened) input example; >= 1. 784 = a 28x28 grey image.
  int64_t in_features = 784;
  // Width of each hidden Linear + ReLU layer, in order; each >= 1. May be empty (a single Linear).
  std::vector<int64_t> hidden = {64, 64};
  // Outputs of the last Linear layer (no activation after it); >= 1.
  int64_t out_features = 10;
};

// Linear + ReLU for each hidden size, then a final Linear. Parameters are named
// "layers.<i>.weight" / "layers.<i>.bias" (i counts the ReLUs too). Default: 55,050 parameters.
// Construction throws gradwire::InvalidArgument for sizes < 1.
class MlpImpl : public torch::nn::Module {
 public:
  explicit MlpImpl(MlpOptions options = {});

  // x: [N, ...] with in_features elements per example (flattened from dim 1) -> [N, out_features].
  // Throws gradwire::InvalidArgument for any other shape.
  torch::Tensor forward(const torch::Tensor& x);

  // From now on forward() calls `hook` before each Linear layer ("layers.0", "layers.2"...), not
  // before the ReLUs. Replaces an earlier hook; an empty function removes it. See hooks.h.
  void set_forward_pre_hook(ForwardPreHook hook);

  const MlpOptions& options() const { return options_; }

 private:
  MlpOptions options_;
  torch::nn::Sequential layers_{nullptr};
  ForwardPreHook pre_hook_;
};
TORCH_MODULE(Mlp);

struct SmallCnnOptions {
  // Channels of the input image; >= 1.
  int64_t in_channels = 1;
  // Outputs of the final Linear layer; >= 1.
  int64_t num_classes = 10;
  // Height and width of the (square) input image; >= 4. Fixes the classifier's input size.
  int64_t image_size = 28;
};

// conv3x3(16) + BatchNorm + ReLU + maxpool 2, conv3x3(32) + BatchNorm + ReLU + maxpool 2,
// flatten, Linear. Parameters: conv1, bn1, conv2, bn2, fc (convs without bias, BatchNorm follows).
// Default (1x28x28, 10 classes): 20,538 parameters.
// Construction throws gradwire::InvalidArgument for out-of-range options.
class SmallCnnImpl : public torch::nn::Module {
 public:
  explicit SmallCnnImpl(SmallCnnOptions options = {});

  // x: [N, in_channels, image_size, image_size] -> [N, num_classes]. Throws
  // gradwire::InvalidArgument for any other shape.
  torch::Tensor forward(torch::Tensor x);

  // From now on forward() calls `hook` before conv1, bn1, conv2, bn2 and fc, in that order.
  // Replaces an earlier hook; an empty function removes it. See hooks.h.
  void set_forward_pre_hook(ForwardPreHook hook);

  const SmallCnnOptions& options() const { return options_; }

 private:
  SmallCnnOptions options_;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::BatchNorm2d bn2_{nullptr};
  torch::nn::Linear fc_{nullptr};
  ForwardPreHook pre_hook_;
};
TORCH_MODULE(SmallCnn);

}  // namespace gradwire::models
