// torchvision's ResNet and ResNeXt for image classification, as libtorch C++ modules.
//
// The architecture, weight initialisation, parameter names and parameter counts match
// torchvision.models.resnet (v1.5: the stride sits on the 3x3 conv of a Bottleneck):
// a 7x7/2 stem conv + BatchNorm + ReLU + 3x3/2 max-pool, four stages of residual blocks with 64,
// 128, 256 and 512 base channels (strides 1, 2, 2, 2), adaptive average pooling to 1x1 and a
// fully connected classifier. Parameter names follow torchvision ("conv1.weight",
// "layer1.0.conv1.weight", "layer1.0.downsample.0.weight", "fc.bias"...). Dilation
// (replace_stride_with_dilation) and custom norm layers are not supported.
//
// Input: float [N, 3, H, W] with H, W >= 1 (224 for ImageNet; any size works thanks to the
// adaptive pooling). Output: logits [N, num_classes].
//
// Thread safety: as any torch::nn::Module; concurrent forward() calls on one instance in training
// mode race on the BatchNorm running statistics, and set_forward_pre_hook must not race with
// forward(). See docs/models.md.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <array>
#include <cstdint>

#include "gradwire/models/hooks.h"

namespace gradwire::models {

// The residual block a ResNet is made of.
enum class BlockKind {
  // Two 3x3 convs, expansion 1 (resnet18/34). Requires groups == 1 and width_per_group == 64.
  kBasic,
  // 1x1 -> 3x3 (grouped) -> 1x1 convs, expansion 4 (resnet50 and deeper, ResNeXt).
  kBottleneck,
};

struct ResNetOptions {
  // Block type of every stage.
  BlockKind block = BlockKind::kBasic;
  // Blocks in each of the four stages; each must be >= 1. The default is resnet18's.
  std::array<int64_t, 4> layers = {2, 2, 2, 2};
  // Groups of the 3x3 conv in each Bottleneck (ResNeXt "cardinality"); >= 1.
  int64_t groups = 1;
  // Channels per group of the Bottleneck's 3x3 conv at the first stage (64 for plain ResNet;
  // ResNeXt 32x4d uses 4). The 3x3 conv has planes * width_per_group / 64 * groups channels.
  int64_t width_per_group = 64;
  // Outputs of the final fully connected layer; >= 1.
  int64_t num_classes = 1000;
  // Start every residual branch's last BatchNorm with weight 0, so that each block begins as the
  // identity (torchvision's option; improves large-batch training by 0.2~0.3%).
  bool zero_init_residual = false;
};

// A ResNet / ResNeXt. Construction throws gradwire::InvalidArgument for inconsistent options.
class ResNetImpl : public torch::nn::Module {
 public:
  explicit ResNetImpl(const ResNetOptions& options = {});

  // x: [N, 3, H, W] floating point -> logits [N, num_classes]. Throws gradwire::InvalidArgument
  // when x is not 4-dimensional with 3 channels.
  torch::Tensor forward(torch::Tensor x);

  // From now on forward() calls `hook` before each layer with parameters, in this order: conv1,
  // bn1, each block of layer1 to layer4 (a BasicBlock or Bottleneck, downsample included, as one
  // layer), fc. Not before the ReLU and the pools. Replaces an earlier hook; an empty function
  // removes it. See hooks.h.
  void set_forward_pre_hook(ForwardPreHook hook);

  const ResNetOptions& options() const { return options_; }

 private:
  torch::nn::Sequential make_stage(int64_t planes, int64_t blocks, int64_t stride);

  ResNetOptions options_;
  int64_t in_planes_ = 64;  // channels entering the next stage while building
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::ReLU relu_{nullptr};
  torch::nn::MaxPool2d maxpool_{nullptr};
  torch::nn::Sequential layer1_{nullptr};
  torch::nn::Sequential layer2_{nullptr};
  torch::nn::Sequential layer3_{nullptr};
  torch::nn::Sequential layer4_{nullptr};
  torch::nn::AdaptiveAvgPool2d avgpool_{nullptr};
  torch::nn::Linear fc_{nullptr};
  ForwardPreHook pre_hook_;
};
TORCH_MODULE(ResNet);

// The torchvision configurations. Parameter counts with num_classes = 1000:
//   resnet18 11,689,512; resnet50 25,557,032; resnet101 44,549,160;
//   resnext50_32x4d 25,028,904; resnext101_32x8d 88,791,336.
ResNet resnet18(int64_t num_classes = 1000);          // kBasic, {2, 2, 2, 2}
ResNet resnet50(int64_t num_classes = 1000);          // kBottleneck, {3, 4, 6, 3}
ResNet resnet101(int64_t num_classes = 1000);         // kBottleneck, {3, 4, 23, 3}
ResNet resnext50_32x4d(int64_t num_classes = 1000);   // {3, 4, 6, 3}, groups 32, width 4
ResNet resnext101_32x8d(int64_t num_classes = 1000);  // {3, 4, 23, 3}, groups 32, width 8

}  // namespace gradwire::models
