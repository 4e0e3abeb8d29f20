// torchvision's VGG (without batch norm) for image classification, as a libtorch C++ module.
//
// The architecture, weight initialisation, parameter names and parameter counts match
// torchvision.models.vgg: `features`, a 3x3 conv (padding 1) + ReLU for each channel entry of the
// configuration and a 2x2/2 max-pool for each "M"; `avgpool`, adaptive average pooling to 7x7;
// `classifier`, Linear(512 * 7 * 7, 4096), ReLU, Dropout, Linear(4096, 4096), ReLU, Dropout,
// Linear(4096, num_classes). Parameter names follow torchvision ("features.0.weight",
// "classifier.6.bias"...), indices counting the ReLUs, pools and Dropouts too.
//
// Input: float [N, 3, H, W] with H, W >= kVggMinImageSize (224 for ImageNet; the five max-pools
// need 32). Output: logits [N, num_classes].
//
// Thread safety: as any torch::nn::Module; set_forward_pre_hook must not race with forward().
// See docs/models.md.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>

#include "gradwire/models/hooks.h"

namespace gradwire::models {

// The smallest height and width a VGG accepts: five 2x2 max-pools take 32 down to 1.
constexpr int64_t kVggMinImageSize = 32;

// torchvision's layer configurations (its `cfgs` keys), without batch norm.
enum class VggConfig {
  // vgg11: 64, M, 128, M, 256, 256, M, 512, 512, M, 512, 512, M (8 convs).
  kA,
  // vgg16: 64, 64, M, 128, 128, M, 256, 256, 256, M, 512, 512, 512, M, 512, 512, 512, M (13 convs).
  kD,
};

struct VggOptions {
  // Which configuration `features` follows.
  VggConfig cfg = VggConfig::kA;
  // Outputs of the last Linear layer; >= 1.
  int64_t num_classes = 1000;
  // Drop probability of both Dropout layers of the classifier, in [0, 1]; torchvision's 0.5.
  // 0 makes training-mode forward deterministic (tests).
  double dropout = 0.5;
};

// A VGG. Construction throws gradwire::InvalidArgument for out-of-range options.
class VggImpl : public torch::nn::Module {
 public:
  explicit VggImpl(const VggOptions& options = {});

  // x: [N, 3, H, W] floating point with H, W >= kVggMinImageSize -> logits [N, num_classes].
  // Throws gradwire::InvalidArgument for any other shape.
  torch::Tensor forward(torch::Tensor x);

  // From now on forward() calls `hook` before each Conv2d of `features` and each Linear of
  // `classifier` (the layers with parameters; not the ReLUs, pools and Dropouts), in that order.
  // Replaces an earlier hook; an empty function removes it. See hooks.h.
  void set_forward_pre_hook(ForwardPreHook hook);

  const VggOptions& options() const { return options_; }

 private:
  VggOptions options_;
  torch::nn::Sequential features_{nullptr};
  torch::nn::AdaptiveAvgPool2d avgpool_{nullptr};
  torch::nn::Sequential classifier_{nullptr};
  ForwardPreHook pre_hook_;
};
TORCH_MODULE(Vgg);

// The torchvision configurations. Parameter counts with num_classes = 1000:
//   vgg11 132,863,336; vgg16 138,357,544.
Vgg vgg11(int64_t num_classes = 1000);  // VggConfig::kA
Vgg vgg16(int64_t num_classes = 1000);  // VggConfig::kD

}  // namespace gradwire::models
