// Internal: how the models' forward() calls their ForwardPreHook (include/gradwire/models/hooks.h).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/types.h>

#include <memory>

#include "gradwire/models/hooks.h"

namespace gradwire::models::detail {

// Calls `hook`, when set, with `layer`.
inline void before_layer(const ForwardPreHook& hook, const torch::nn::Module& layer) {
  if (hook) hook(layer);
}

// layers->forward(x), calling `hook` (when set) before each layer of `layers` that holds
// parameters. Without a hook this is Sequential::forward itself.
inline torch::Tensor forward_layers(torch::nn::Sequential& layers, torch::Tensor x,
                                    const ForwardPreHook& hook) {
  if (!hook) return layers->forward(x);
  for (auto& layer : *layers) {
    std::shared_ptr<torch::nn::Module> module = layer.ptr();
    if (!module->parameters().empty()) hook(*module);
    x = layer.forward(x);
  }
  return x;
}

}  // namespace gradwire::models::detail
