#include "gradwire/models/zoo.h"

#include <functional>

#include "gradwire/common/error.h"
#include "gradwire/models/resnet.h"
#include "gradwire/models/small.h"

namespace gradwire::models {
namespace {

// One catalogue row: what the model is and how to build and feed it.
struct Entry {
  ModelInfo info;
  std::function<torch::nn::AnyModule(const ModelConfig&)> make;
  std::function<std::vector<int64_t>(const ModelConfig&)> example_shape;
  std::function<int64_t(const ModelConfig&)> num_outputs;
};

void check_resnet_config(const std::string& name, const ModelConfig& config) {
  if (config.image_size < 1 || config.num_classes < 1) {
    throw InvalidArgument("model '" + name + "' needs ModelConfig::image_size >= 1 and " +
                          "num_classes >= 1, got " + std::to_string(config.image_size) + " and " +
                          std::to_string(config.num_classes));
  }
}

Entry resnet_entry(const std::string& name, const std::string& description,
                   ResNet (*factory)(int64_t)) {
  Entry entry;
  entry.info = {name, description, /*image=*/true};
  entry.make = [name, factory](const ModelConfig& config) {
    check_resnet_config(name, config);
    return torch::nn::AnyModule(factory(config.num_classes));
  };
  entry.example_shape = [name](const ModelConfig& config) {
    check_resnet_config(name, config);
    return std::vector<int64_t>{3, config.image_size, config.image_size};
  };
  entry.num_outputs = [name](const ModelConfig& config) {
    check_resnet_config(name, config);
    return config.num_classes;
  };
  return entry;
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

}  // namespace gradwire::models
