// Tiny models for the DDP tests, defined here so the tests depend on nothing but the DDP API.
// Every model maps a float batch [B, ...] to [B, out] and is trained with an MSE loss.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace gradwire::ddp::testing {

// Linear layers of the given widths with ReLU between them: widths {4, 8, 3} is
// Linear(4, 8) -> ReLU -> Linear(8, 3). Layers are named fc0, fc1, ...
struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(const std::vector<int64_t>& widths) {
    for (size_t i = 0; i + 1 < widths.size(); ++i) {
      layers.push_back(
          register_module("fc" + std::to_string(i), torch::nn::Linear(widths[i], widths[i + 1])));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    for (size_t i = 0; i < layers.size(); ++i) {
      x = layers[i]->forward(x);
      if (i + 1 < layers.size()) x = torch::relu(x);
    }
    return x;
  }
  std::vector<torch::nn::Linear> layers;
};
TORCH_MODULE(Mlp);

// Conv2d -> BatchNorm2d -> ReLU -> Linear on [B, 1, 6, 6] inputs; output [B, 3].
struct BnCnnImpl : torch::nn::Module {
  BnCnnImpl()
      : conv(register_module("conv",
                             torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3).padding(1)))),
        bn(register_module("bn", torch::nn::BatchNorm2d(4))),
        fc(register_module("fc", torch::nn::Linear(4 * 6 * 6, 3))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(bn->forward(conv->forward(x)));
    return fc->forward(x.flatten(1));
  }
  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn;
  torch::nn::Linear fc;
};
TORCH_MODULE(BnCnn);

// fc1 -> ReLU -> fc2 on [B, 8] inputs; `unused` (Linear(8, 4)) never takes part in forward.
struct UnusedBranchImpl : torch::nn::Module {
  UnusedBranchImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        unused(register_module("unused", torch::nn::Linear(8, 4))),
        fc2(register_module("fc2", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2->forward(torch::relu(fc1->forward(x))); }
  torch::nn::Linear fc1;
  torch::nn::Linear unused;
  torch::nn::Linear fc2;
};
TORCH_MODULE(UnusedBranch);

// x @ weight^T with a weight it is given (and registers as its own parameter).
struct TiedProjectionImpl : torch::nn::Module {
  explicit TiedProjectionImpl(torch::Tensor shared) {
    weight = register_parameter("weight", std::move(shared));
  }
  torch::Tensor forward(const torch::Tensor& x) { return x.matmul(weight.t()); }
  torch::Tensor weight;
};
TORCH_MODULE(TiedProjection);

// Weight tying: `decoder.weight` is the same tensor as `encoder.weight`, used in both places of
// forward: encoder -> ReLU -> middle -> ReLU -> decoder, all 6 wide, on [B, 6] inputs.
struct TiedImpl : torch::nn::Module {
  TiedImpl()
      : encoder(register_module("encoder", torch::nn::Linear(6, 6))),
        middle(register_module("middle", torch::nn::Linear(6, 6))),
        decoder(register_module("decoder", TiedProjection(encoder->weight))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(encoder->forward(x));
    x = torch::relu(middle->forward(x));
    return decoder->forward(x);
  }
  torch::nn::Linear encoder;
  torch::nn::Linear middle;
  TiedProjection decoder;
};
TORCH_MODULE(Tied);

// The small MLP of the equivalence and no_sync tests: 5 -> 12 -> 8 -> 3.
inline Mlp small_mlp() { return Mlp(std::vector<int64_t>{5, 12, 8, 3}); }

}  // namespace gradwire::ddp::testing
