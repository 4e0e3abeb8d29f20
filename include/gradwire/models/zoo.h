// A catalogue of models by name, for benchmarks, examples and tests that pick a model at run time
// (e.g. `gradwire-bench --model resnet50`).
//
// Names: resnet18, resnet50, resnet101, resnext50_32x4d, resnext101_32x8d (torchvision's
// architectures, see resnet.h), vgg11 and vgg16 (vgg.h), mlp and cnn (small.h). Every function
// throws gradwire::InvalidArgument for an unknown name, with the known names in the message, and
// for a ModelConfig a model cannot use. All functions but set_forward_pre_hook are pure and
// thread-safe.
#pragma once

#include <torch/nn/modules/container/sequential.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gradwire/models/hooks.h"

namespace gradwire::models {

struct ModelInfo {
  std::string name;         // what make_model() accepts
  std::string description;  // one line for --help and reports
  bool image = false;       // input is an image [C, H, W] (false: a flat feature vector)
};

// Every model make_model() knows, in a fixed order: the five ResNets (smallest first), the two
// VGGs, then mlp and cnn.
const std::vector<ModelInfo>& model_catalog();

// How to size a catalogued model.
//
// The ResNets and VGGs use both fields. The small models are fixed in size so that tests and
// benchmarks know their cost: "mlp" is 784 -> 64 -> 64 -> 10 (a flattened 28x28 image, 55,050
// parameters) and "cnn" is SmallCnn on 1x28x28 images with 10 classes; both ignore ModelConfig.
struct ModelConfig {
  // Height and width of the square RGB input of the ResNets and VGGs: >= 1 for a ResNet, >= 32
  // (kVggMinImageSize) for a VGG. Both pool adaptively, so any larger size works; 224 is
  // ImageNet's, 32 or 64 keep tests fast. Does not change parameter counts.
  int64_t image_size = 224;
  // Classifier outputs of the ResNets and VGGs; >= 1.
  int64_t num_classes = 1000;
};

// A fresh, randomly initialised instance of the named model, wrapped as the single element
// (named "0") of a Sequential so that callers hold any model with one type; parameter names are
// therefore prefixed with "0." ("0.conv1.weight"). The model is in training mode, on the CPU.
torch::nn::Sequential make_model(const std::string& name, const ModelConfig& config = {});

// Shape of one input example, without the batch dimension: {3, image_size, image_size} for the
// ResNets and VGGs, {784} for mlp, {1, 28, 28} for cnn. A float batch of shape
// {N, example_shape...} is a valid input of make_model(name, config).
std::vector<int64_t> example_shape(const std::string& name, const ModelConfig& config = {});

// Outputs per example (logits): config.num_classes for the ResNets and VGGs, 10 for mlp and cnn.
int64_t num_outputs(const std::string& name, const ModelConfig& config = {});

// Gives the model inside `model`, a Sequential make_model() returned, the forward pre-hook `hook`
// (each model's set_forward_pre_hook; an empty function removes the hook). Returns false, changing
// nothing, when `model` is not one element long or that element is not a zoo model (every model of
// the catalogue has hooks). Must not race with model->forward(). See hooks.h.
bool set_forward_pre_hook(torch::nn::Sequential& model, ForwardPreHook hook);

}  // namespace gradwire::models
