// Data-parallel training of a small classifier with gradwire's DistributedDataParallel.
//
//   build/bin/gradwire-run --nproc-per-node 2 build/bin/example-ddp-train [steps]
//   build/bin/gradwire-run --nproc-per-node gpu build/bin/example-ddp-train [steps]   (a GPU each)
//
// Every rank draws the same synthetic dataset, trains on its own shard of each global batch and
// ends with the same parameters; each rank prints a checksum of them so that can be checked.
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "gradwire/ddp/ddp.h"
#include "gradwire/gradwire.h"

namespace {

// Any torch::nn::Module works; this one has BatchNorm buffers that DDP broadcasts.
struct ClassifierImpl : torch::nn::Module {
  ClassifierImpl()
      : hidden(register_module("hidden", torch::nn::Linear(20, 64))),
        norm(register_module("norm", torch::nn::BatchNorm1d(64))),
        out(register_module("out", torch::nn::Linear(64, 4))) {}
  torch::Tensor forward(torch::Tensor x) { return out(torch::relu(norm(hidden(x)))); }
  torch::nn::Linear hidden;
  torch::nn::BatchNorm1d norm;
  torch::nn::Linear out;
};
TORCH_MODULE(Classifier);

int run(int steps) {
  // With GPUs each worker trains on its own, the one its local rank names (gradwire-run
  // --nproc-per-node gpu, torchrun), and init() picks the nccl backend; otherwise the CPU.
  const bool cuda = torch::cuda::is_available();
  if (cuda) {
    gradwire::set_cuda_device(
        gradwire::resolve_world({}, gradwire::EnvMap::from_process()).local_rank);
  }
  auto world = gradwire::init();
  auto comm = world->communicator();
  const torch::Device device = comm->device();
  const int rank = comm->rank();
  const int ranks = comm->size();
  constexpr int64_t kGlobalBatch = 64;

  torch::manual_seed(0);  // the same data on every rank; DDP makes the parameters equal anyway
  torch::Tensor centers = torch::randn({4, 20}) * 2;
  Classifier model;
  model->to(device);
  gradwire::ddp::DistributedDataParallel ddp(model, comm);  // the one line DDP adds
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));

  for (int step = 1; step <= steps; ++step) {
    torch::Tensor labels = torch::randint(0, 4, {kGlobalBatch});
    torch::Tensor inputs = centers.index_select(0, labels) + torch::randn({kGlobalBatch, 20});
    // This rank's shard of the global batch.
    torch::Tensor x = inputs.chunk(ranks)[rank].to(device);
    torch::Tensor y = labels.chunk(ranks)[rank].to(device);

    optimizer.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(ddp(x), y);
    loss.backward();  // gradients are averaged over the ranks here
    optimizer.step();
    if (rank == 0 && (step % 10 == 0 || step == steps)) {
      std::printf("step %d loss %.4f\n", step, loss.item<double>());
    }
  }
  double checksum = 0;
  for (const auto& p : model->parameters()) checksum += p.sum().item<double>();
  std::printf("rank %d parameter checksum %.9g\n", rank, checksum);
  if (rank == 0) std::cout << gradwire::ddp::to_string(ddp.stats());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc > 1 ? std::atoi(argv[1]) : 50);
  } catch (const gradwire::Error& e) {
    std::fprintf(stderr, "example-ddp-train: %s\n", e.what());
    return 1;
  }
}
