#include "gradwire/models/resnet.h"

#include <torch/nn/init.h>

#include <string>
#include <utility>

#include "gradwire/common/error.h"
#include "pre_hook.h"

namespace gradwire::models {
namespace {

torch::nn::Conv2d conv3x3(int64_t in, int64_t out, int64_t stride = 1, int64_t groups = 1) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).groups(groups).bias(false));
}

torch::nn::Conv2d conv1x1(int64_t in, int64_t out, int64_t stride = 1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 1).stride(stride).bias(false));
}

// The shortcut projection of a block whose output differs from its input in shape:
// 1x1 conv (with the block's stride) + BatchNorm, torchvision's "downsample".
torch::nn::Sequential make_downsample(int64_t in, int64_t out, int64_t stride) {
  return torch::nn::Sequential(conv1x1(in, out, stride), torch::nn::BatchNorm2d(out));
}

// Two 3x3 convs; out channels = planes.
class BasicBlockImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 1;

  BasicBlockImpl(int64_t in_planes, int64_t planes, int64_t stride) {
    conv1 = register_module("conv1", conv3x3(in_planes, planes, stride));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(planes));
    conv2 = register_module("conv2", conv3x3(planes, planes));
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(planes));
    if (stride != 1 || in_planes != planes * kExpansion) {
      downsample =
          register_module("downsample", make_downsample(in_planes, planes * kExpansion, stride));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = torch::relu(bn1(conv1(x)));
    out = bn2(conv2(out));
    out += downsample.is_empty() ? x : downsample->forward(x);
    return torch::relu_(out);
  }

  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::Conv2d conv2{nullptr};
  torch::nn::BatchNorm2d bn2{nullptr};
  torch::nn::Sequential downsample{nullptr};
};
TORCH_MODULE(BasicBlock);

// 1x1 (reduce) -> 3x3 grouped (stride) -> 1x1 (expand); out channels = planes * 4.
class BottleneckImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 4;

  BottleneckImpl(int64_t in_planes, int64_t planes, int64_t stride, int64_t groups,
                 int64_t width_per_group) {
    int64_t width = planes * width_per_group / 64 * groups;
    conv1 = register_module("conv1", conv1x1(in_planes, width));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(width));
    conv2 = register_module("conv2", conv3x3(width, width, stride, groups));
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(width));
    conv3 = register_module("conv3", conv1x1(width, planes * kExpansion));
    bn3 = register_module("bn3", torch::nn::BatchNorm2d(planes * kExpansion));
    if (stride != 1 || in_planes != planes * kExpansion) {
      downsample =
          register_module("downsample", make_downsample(in_planes, planes * kExpansion, stride));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = torch::relu(bn1(conv1(x)));
    out = torch::relu(bn2(conv2(out)));
    out = bn3(conv3(out));
    out += downsample.is_empty() ? x : downsample->forward(x);
    return torch::relu_(out);
  }

  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::Conv2d conv2{nullptr};
  torch::nn::BatchNorm2d bn2{nullptr};
  torch::nn::Conv2d conv3{nullptr};
  torch::nn::BatchNorm2d bn3{nullptr};
  torch::nn::Sequential downsample{nullptr};
};
TORCH_MODULE(Bottleneck);

void validate(const ResNetOptions& options) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw InvalidArgument("ResNetOptions: " + what);
  };
  for (int64_t blocks : options.layers) {
    require(blocks >= 1, "every stage needs at least one block, got " + std::to_string(blocks));
  }
  require(options.groups >= 1, "groups must be >= 1, got " + std::to_string(options.groups));
  require(options.width_per_group >= 1,
          "width_per_group must be >= 1, got " + std::to_string(options.width_per_group));
  require(options.num_classes >= 1,
          "num_classes must be >= 1, got " + std::to_string(options.num_classes));
  require(options.block == BlockKind::kBottleneck ||
              (options.groups == 1 && options.width_per_group == 64),
          "BlockKind::kBasic supports only groups = 1 and width_per_group = 64 (got " +
              std::to_string(options.groups) + " and " + std::to_string(options.width_per_group) +
              "); use BlockKind::kBottleneck for ResNeXt");
}

int64_t expansion(BlockKind block) {
  return block == BlockKind::kBasic ? BasicBlockImpl::kExpansion : BottleneckImpl::kExpansion;
}

ResNet make_resnet(BlockKind block, std::array<int64_t, 4> layers, int64_t groups,
                   int64_t width_per_group, int64_t num_classes) {
  ResNetOptions options;
  options.block = block;
  options.layers = layers;
  options.groups = groups;
  options.width_per_group = width_per_group;
  options.num_classes = num_classes;
  return ResNet(options);
}

}  // namespace

ResNetImpl::ResNetImpl(const ResNetOptions& options) : options_(options) {
  validate(options_);
  conv1_ = register_module(
      "conv1",
      torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(64));
  relu_ = register_module("relu", torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)));
  maxpool_ = register_module(
      "maxpool", torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(3).stride(2).padding(1)));
  layer1_ = register_module("layer1", make_stage(64, options_.layers[0], 1));
  layer2_ = register_module("layer2", make_stage(128, options_.layers[1], 2));
  layer3_ = register_module("layer3", make_stage(256, options_.layers[2], 2));
  layer4_ = register_module("layer4", make_stage(512, options_.layers[3], 2));
  avgpool_ = register_module("avgpool", torch::nn::AdaptiveAvgPool2d(1));
  fc_ = register_module("fc",
                        torch::nn::Linear(512 * expansion(options_.block), options_.num_classes));

  // torchvision's initialisation; fc keeps Linear's default (same as PyTorch's).
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* conv = module->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = module->as<torch::nn::BatchNorm2d>()) {
      torch::nn::init::ones_(bn->weight);
      torch::nn::init::zeros_(bn->bias);
    }
  }
  if (options_.zero_init_residual) {
    for (auto& module : modules(/*include_self=*/false)) {
      if (auto* basic = module->as<BasicBlock>()) {
        torch::nn::init::zeros_(basic->bn2->weight);
      } else if (auto* bottleneck = module->as<Bottleneck>()) {
        torch::nn::init::zeros_(bottleneck->bn3->weight);
      }
    }
  }
}

torch::nn::Sequential ResNetImpl::make_stage(int64_t planes, int64_t blocks, int64_t stride) {
  torch::nn::Sequential stage;
  for (int64_t i = 0; i < blocks; ++i) {
    int64_t block_stride = i == 0 ? stride : 1;
    if (options_.block == BlockKind::kBasic) {
      stage->push_back(BasicBlock(in_planes_, planes, block_stride));
    } else {
      stage->push_back(
          Bottleneck(in_planes_, planes, block_stride, options_.groups, options_.width_per_group));
    }
    in_planes_ = planes * expansion(options_.block);
  }
  return stage;
}

torch::Tensor ResNetImpl::forward(torch::Tensor x) {
  if (x.dim() != 4 || x.size(1) != 3) {
    throw InvalidArgument("ResNet expects input of shape [N, 3, H, W], got " + c10::str(x.sizes()) +
                          "; add a batch dimension or convert to RGB");
  }
  detail::before_layer(pre_hook_, *conv1_);
  x = conv1_(x);
  detail::before_layer(pre_hook_, *bn1_);
  x = maxpool_(relu_(bn1_(x)));
  for (torch::nn::Sequential* stage : {&layer1_, &layer2_, &layer3_, &layer4_}) {
    x = detail::forward_layers(*stage, std::move(x), pre_hook_);
  }
  x = torch::flatten(avgpool_(x), 1);
  detail::before_layer(pre_hook_, *fc_);
  return fc_(x);
}

void ResNetImpl::set_forward_pre_hook(ForwardPreHook hook) { pre_hook_ = std::move(hook); }

ResNet resnet18(int64_t num_classes) {
  return make_resnet(BlockKind::kBasic, {2, 2, 2, 2}, 1, 64, num_classes);
}

ResNet resnet50(int64_t num_classes) {
  return make_resnet(BlockKind::kBottleneck, {3, 4, 6, 3}, 1, 64, num_classes);
}

ResNet resnet101(int64_t num_classes) {
  return make_resnet(BlockKind::kBottleneck, {3, 4, 23, 3}, 1, 64, num_classes);
}

ResNet resnext50_32x4d(int64_t num_classes) {
  return make_resnet(BlockKind::kBottleneck, {3, 4, 6, 3}, 32, 4, num_classes);
}

ResNet resnext101_32x8d(int64_t num_classes) {
  return make_resnet(BlockKind::kBottleneck, {3, 4, 23, 3}, 32, 8, num_classes);
}

}  // namespace gradwire::models
