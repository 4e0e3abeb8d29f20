// What the hook tests record: the layers a ForwardPreHook is called with, by name, and whether
// those layers hold every parameter of the model exactly once.
#pragma once

#include <torch/nn/module.h>

#include <map>
#include <string>
#include <vector>

#include "gradwire/models/hooks.h"

namespace gradwire::models::testing {

class HookRecorder {
 public:
  // A hook that appends the layer it is called with; the recorder must outlive its use.
  ForwardPreHook hook() {
    return [this](const torch::nn::Module& layer) { layers_.push_back(&layer); };
  }

  const std::vector<const torch::nn::Module*>& layers() const { return layers_; }

  // The recorded layers' names in `model` (named_modules()' names; "?" for a module not in it).
  std::vector<std::string> names_in(const torch::nn::Module& model) const {
    std::map<const torch::nn::Module*, std::string> names;
    for (const auto& item : model.named_modules("", /*include_self=*/false)) {
      names[item.value().get()] = item.key();
    }
    std::vector<std::string> result;
    for (const torch::nn::Module* layer : layers_) {
      auto found = names.find(layer);
      result.push_back(found == names.end() ? "?" : found->second);
    }
    return result;
  }

  // The parameters of `model` that the recorded layers do not hold exactly once, each as
  // "name: count"; empty when a waiter per recorded layer covers every parameter.
  std::vector<std::string> parameters_not_covered_once(const torch::nn::Module& model) const {
    std::map<const void*, int> holders;
    for (const torch::nn::Module* layer : layers_) {
      for (const auto& parameter : layer->parameters()) {
        ++holders[parameter.unsafeGetTensorImpl()];
      }
    }
    std::vector<std::string> wrong;
    for (const auto& item : model.named_parameters()) {
      int count = holders[item.value().unsafeGetTensorImpl()];
      if (count != 1) wrong.push_back(item.key() + ": " + std::to_string(count));
    }
    return wrong;
  }

 private:
  std::vector<const torch::nn::Module*> layers_;
};

}  // namespace gradwire::models::testing
