#include "model.h"

namespace fashion_mnist {

namespace F = torch::nn::functional;

ConvNetImpl::ConvNetImpl()
    : conv1(register_module("conv1",
                            torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 16, 3).padding(1)))),
      conv2(register_module("conv2",
                            torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 3).padding(1)))),
      hidden(register_module("hidden", torch::nn::Linear(32 * 7 * 7, 128))),
      dropout(register_module("dropout", torch::nn::Dropout(0.25))),
      out(register_module("out", torch::nn::Linear(128, 10))) {}

torch::Tensor ConvNetImpl::forward(torch::Tensor images) {
  torch::Tensor x = F::max_pool2d(torch::relu(conv1(images)), F::MaxPool2dFuncOptions(2));
  x = F::max_pool2d(torch::relu(conv2(x)), F::MaxPool2dFuncOptions(2));
  x = torch::relu(hidden(x.flatten(1)));
  return out(dropout(x));
}

double parameter_checksum(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  double sum = 0;
  for (const torch::Tensor& parameter : model.parameters()) {
    sum += parameter.to(torch::kFloat64).sum().item<double>();
  }
  return sum;
}

}  // namespace fashion_mnist
