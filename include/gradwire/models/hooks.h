// Forward pre-hooks for the zoo's models. libtorch's C++ modules have no hooks of their own, so
// each model's forward() calls the one ForwardPreHook it was given (set_forward_pre_hook on
// ResNet, Vgg, Mlp and SmallCnn, or on the Sequential of make_model through zoo.h).
//
// The hook is called with each layer that holds parameters, right before that layer runs, in
// forward order; every parameter of the model belongs to exactly one such layer. Layers without
// parameters (ReLU, pooling, Dropout) are not reported. Which layers each model reports:
// docs/models.md "Forward pre-hooks". Use: a parameter-server client waits in the hook until the
// layer's parameters have arrived, so the first layers compute while later ones still transfer.
//
// The hook runs on the thread that calls forward(), and may block; an exception it throws leaves
// forward() at once, before the layer runs. Without a hook, forward() costs what it did before:
// one test of an empty std::function per layer.
#pragma once

#include <torch/nn/module.h>

#include <functional>

namespace gradwire::models {

// `layer` is the module about to run: a child of the model (e.g. its "conv1" or "fc") or a block
// of a stage ("layer1.0"); compare its address with the model's named_modules() to name it.
using ForwardPreHook = std::function<void(const torch::nn::Module& layer)>;

}  // namespace gradwire::models
