#include "gradwire/models/zoo.h"

#include <functional>
#include <memory>
#include <utility>

#include "gradwire/common/error.h"
#include "gradwire/models/resnet.h"
#include "gradwire/models/small.h"
#include "gradwire/models/vgg.h"

namespace gradwire::models {
namespace {

// One catalogue row: what the model is and how to build and feed it.
struct Entry {
  ModelInfo info;
  std::function<torch::nn::AnyModule(const ModelConfig&)> make;
  std::function<std::vector<int64_t>(const ModelConfig&)> example_shape;
  std::function<int64_t(const ModelConfig&)> num_outputs;
};

// The image models (ResNets and VGGs) take both ModelConfig fields; a VGG needs images of at least
// kVggMinImageSize.
void check_image_config(const std::string& name, const ModelConfig& config,
                        int64_t min_image_size) {
  if (config.image_size < min_image_size || config.num_classes < 1) {
    throw InvalidArgument("model '" + name +
                          "' needs ModelConfig::image_size >= " + std::to_string(min_image_size) +
                          " and num_classes >= 1, got " + std::to_string(config.image_size) +
                          " and " + std::to_string(config.num_classes));
  }
}

// A model of the classifier shape: input {3, image_size, image_size}, num_classes outputs.
template <typename Holder>
Entry image_entry(const std::string& name, const std::string& description,
                  Holder (*factory)(int64_t), int64_t min_image_size) {
  Entry entry;
  entry.info = {name, description, /*image=*/true};
  entry.make = [name, factory, min_image_size](const ModelConfig& config) {
    check_image_config(name, config, min_image_size);
    return torch::nn::AnyModule(factory(config.num_classes));
  };
  entry.example_shape = [name, min_image_size](const ModelConfig& config) {
    check_image_config(name, config, min_image_size);
    return std::vector<int64_t>{3, config.image_size, config.image_size};
  };
  entry.num_outputs = [name, min_image_size](const ModelConfig& config) {
    check_image_config(name, config, min_image_size);
    return config.num_classes;
  };
  return entry;
}

Entry resnet_entry(const std::string& name, const std::string& description,
                   ResNet (*factory)(int64_t)) {
  return image_entry(name, description, factory, /*min_image_size=*/1);
}

Entry vgg_entry(const std::string& name, const std::string& description, Vgg (*factory)(int64_t)) {
  return image_entry(name, description, factory, kVggMinImageSize);
}

Entry mlp_entry() {
  Entry entry;
  entry.info = {"mlp", "MLP 784 -> 64 -> 64 -> 10 on flattened 28x28 inputs, 55k parameters",
                /*image=*/false};
  entry.make = [](const ModelConfig&) { return torch::nn::AnyModule(Mlp(MlpOptions{})); };
  entry.example_shape = [](const ModelConfig&) {
    return std::vector<int64_t>{MlpOptions{}.in_features};
  };
  entry.num_outputs = [](const ModelConfig&) { return MlpOptions{}.out_features; };
  return entry;
}

Entry cnn_entry() {
  Entry entry;
  entry.info = {"cnn",
                "two conv + BatchNorm layers and a classifier on 1x28x28 images, 21k parameters",
                /*image=*/true};
  entry.make = [](const ModelConfig&) { return torch::nn::AnyModule(SmallCnn(SmallCnnOptions{})); };
  entry.example_shape = [](const ModelConfig&) {
    SmallCnnOptions options;
    return std::vector<int64_t>{options.in_channels, options.image_size, options.image_size};
  };
  entry.num_outputs = [](const ModelConfig&) { return SmallCnnOptions{}.num_classes; };
  return entry;
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> kTable = {
      resnet_entry("resnet18", "ResNet-18 (torchvision), 11.7M parameters", &resnet18),
      resnet_entry("resnet50", "ResNet-50 (torchvision), 25.6M parameters", &resnet50),
      resnet_entry("resnet101", "ResNet-101 (torchvision), 44.5M parameters", &resnet101),
      resnet_entry("resnext50_32x4d", "ResNeXt-50 32x4d (torchvision), 25.0M parameters",
                   &resnext50_32x4d),
      resnet_entry("resnext101_32x8d", "ResNeXt-101 32x8d (torchvision), 88.8M parameters",
                   &resnext101_32x8d),
      vgg_entry("vgg11", "VGG-11 (torchvision, configuration A), 132.9M parameters", &vgg11),
      vgg_entry("vgg16", "VGG-16 (torchvision, configuration D), 138.4M parameters", &vgg16),
      mlp_entry(),
      cnn_entry(),
  };
  return kTable;
}

const Entry& find(const std::string& name) {
  std::string known;
  for (const Entry& entry : entries()) {
    if (entry.info.name == name) return entry;
    known += (known.empty() ? "" : ", ") + entry.info.name;
  }
  throw InvalidArgument("unknown model '" + name + "'; known models: " + known);
}

// Sets the hook on `module` when it is a Holder's module (a ResNetImpl for ResNet...).
template <typename Holder>
bool set_pre_hook_if(torch::nn::Module& module, ForwardPreHook& hook) {
  auto* model = module.as<Holder>();
  if (model == nullptr) return false;
  model->set_forward_pre_hook(std::move(hook));
  return true;
}

}  // namespace

const std::vector<ModelInfo>& model_catalog() {
  static const std::vector<ModelInfo> kCatalog = [] {
    std::vector<ModelInfo> infos;
    for (const Entry& entry : entries()) infos.push_back(entry.info);
    return infos;
  }();
  return kCatalog;
}

torch::nn::Sequential make_model(const std::string& name, const ModelConfig& config) {
  torch::nn::Sequential model;
  model->push_back(find(name).make(config));
  return model;
}

std::vector<int64_t> example_shape(const std::string& name, const ModelConfig& config) {
  return find(name).example_shape(config);
}

int64_t num_outputs(const std::string& name, const ModelConfig& config) {
  return find(name).num_outputs(config);
}

bool set_forward_pre_hook(torch::nn::Sequential& model, ForwardPreHook hook) {
  if (model.is_empty() || model->size() != 1) return false;
  std::shared_ptr<torch::nn::Module> inner = model->ptr(0);
  return set_pre_hook_if<ResNet>(*inner, hook) || set_pre_hook_if<Vgg>(*inner, hook) ||
         set_pre_hook_if<Mlp>(*inner, hook) || set_pre_hook_if<SmallCnn>(*inner, hook);
}

}  // namespace gradwire::models
