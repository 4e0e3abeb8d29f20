// The hybrid model of PyTorch's DDP + RPC benchmark, trained with one ordinary loop: embedding
// bags whose rows live on parameter servers, dense layers replicated on the trainers with
// DistributedDataParallel.
//
//   build/bin/gradwire-run --servers 2 --nproc-per-node 2 build/bin/example-hybrid-train [steps]
//
// gradwire-run starts the servers first and hands the trainers GRADWIRE_PS_ADDRS and the job
// token. The task is synthetic but learnable: every id has a hidden class, and a bag's label is
// the class most of its ids share. Each trainer prints a checksum of its dense parameters (equal
// on every trainer) and rank 0 prints the loss.
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>

#include "gradwire/ddp/ddp.h"
#include "gradwire/gradwire.h"
#include "gradwire/ps.h"

namespace {

constexpr int64_t kRows = 1000;
constexpr int64_t kDim = 32;
constexpr int64_t kClasses = 4;
constexpr int64_t kBagsPerTrainer = 32;
constexpr int64_t kIdsPerBag = 6;

// A batch of bags: ids, bag offsets and labels, drawn from `generator`.
struct Batch {
  torch::Tensor ids, offsets, labels;
};

Batch draw_batch(at::Generator& generator) {
  torch::Tensor labels = torch::randint(0, kClasses, {kBagsPerTrainer}, generator);
  // Row r belongs to class r % kClasses. Most ids of a bag come from its label's class, the rest
  // from anywhere.
  torch::Tensor rows_of_class =
      torch::randint(0, kRows / kClasses, {kBagsPerTrainer, kIdsPerBag}, generator) * kClasses +
      labels.unsqueeze(1);
  torch::Tensor noise = torch::randint(0, kRows, {kBagsPerTrainer, kIdsPerBag}, generator);
  torch::Tensor use_noise = torch::rand({kBagsPerTrainer, kIdsPerBag}, generator) < 0.3;
  torch::Tensor ids = torch::where(use_noise, noise, rows_of_class).flatten();
  torch::Tensor offsets = torch::arange(0, kBagsPerTrainer * kIdsPerBag, kIdsPerBag);
  return {ids, offsets, labels};
}

int run(int steps) {
  auto world = gradwire::init();
  auto comm = world->communicator();
  const int rank = comm->rank();

  // The servers come from GRADWIRE_PS_ADDRS, the token from the launcher.
  std::shared_ptr<gradwire::ps::Client> client = gradwire::ps::connect();

  gradwire::ps::TableConfig table;
  table.name = "bags";
  table.num_rows = kRows;
  table.dim = kDim;
  table.optimizer.kind = gradwire::ps::OptimizerKind::kAdagrad;
  table.optimizer.lr = 0.1;
  table.initializer.scale = 0.1;
  table.mode = gradwire::ps::UpdateMode::kSync;
  table.num_trainers = comm->size();
  gradwire::ps::RemoteEmbeddingBag embedding(
      client, gradwire::ps::RemoteEmbeddingBagOptions{table, gradwire::ps::BagMode::kMean});

  torch::manual_seed(0);  // the same dense initialisation everywhere (DDP broadcasts it anyway)
  torch::nn::Sequential dense(torch::nn::Linear(kDim, 64), torch::nn::ReLU(),
                              torch::nn::Linear(64, kClasses));
  gradwire::ddp::DistributedDataParallel ddp(dense.ptr(), comm);
  torch::optim::Adam optimizer(dense->parameters(), torch::optim::AdamOptions(0.01));

  at::Generator generator = at::detail::createCPUGenerator(1000 + rank);  // each trainer its data
  for (int step = 1; step <= steps; ++step) {
    Batch batch = draw_batch(generator);
    optimizer.zero_grad();
    torch::Tensor logits = ddp(embedding(batch.ids, batch.offsets));
    torch::Tensor loss = torch::nn::functional::cross_entropy(logits, batch.labels);
    loss.backward();   // dense gradients averaged by DDP, embedding gradients pushed to servers
    optimizer.step();  // the dense part, here
    client->step();    // the embedding rows, on the servers (sync: all trainers' gradients)
    if (rank == 0 && (step % 20 == 0 || step == 1 || step == steps)) {
      std::printf("step %d loss %.4f\n", step, loss.item<double>());
    }
  }
  double checksum = 0;
  for (const auto& p : dense->parameters()) checksum += p.sum().item<double>();
  std::printf("rank %d dense checksum %.9g\n", rank, checksum);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc > 1 ? std::atoi(argv[1]) : 200);
  } catch (const gradwire::Error& e) {
    std::fprintf(stderr, "example-hybrid-train: %s\n", e.what());
    return 1;
  }
}
