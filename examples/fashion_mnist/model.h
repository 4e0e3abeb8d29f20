// The Fashion-MNIST classifier: a small CNN for 1x28x28 images and 10 classes.
//
//   conv 3x3 1->16, ReLU, max-pool 2  ->  16x14x14
//   conv 3x3 16->32, ReLU, max-pool 2 ->  32x7x7
//   linear 1568->128, ReLU, dropout 0.25, linear 128->10 (logits)
//
// About 0.2 M parameters and 1.2 M multiply-adds per image: an epoch of 60,000 images takes
// seconds on a few CPU cores. Dropout draws from libtorch's default CPU generator, which the
// checkpoints save. Not thread-safe (a torch::nn::Module).
#pragma once

#include <torch/torch.h>

namespace fashion_mnist {

struct ConvNetImpl : torch::nn::Module {
  ConvNetImpl();
  // images: [N, 1, 28, 28] normalized floats; returns [N, 10] logits.
  torch::Tensor forward(torch::Tensor images);

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Linear hidden;
  torch::nn::Dropout dropout;
  torch::nn::Linear out;
};
TORCH_MODULE(ConvNet);

// Sum of every parameter (in double): what the job prints as `parameter checksum` (%.9g).
double parameter_checksum(torch::nn::Module& model);

}  // namespace fashion_mnist
