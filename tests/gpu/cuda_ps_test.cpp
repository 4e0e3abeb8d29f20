// Parameter servers with CUDA modules (docs/ps.md "CUDA modules"): RemoteEmbeddingBag,
// RemoteEmbedding and DenseModel on a GPU give their rows and parameters on the GPU and end with
// the tables and parameters of the same training on the CPU, to float32 rounding (the GPU's
// kernels sum in another order). The servers are in-process CPU servers, one set per run.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "client_test_support.h"
#include "gradwire/ps/dense.h"
#include "gradwire/ps/embedding.h"

namespace gradwire::ps {
namespace {

using testing::make_client;
using testing::Servers;
using testing::small_table;

constexpr int kSteps = 3;
const torch::Device kGpu(torch::kCUDA, 0);

void need_a_gpu() {
  if (torch::cuda::device_count() < 1) GTEST_SKIP() << "no visible GPU";
}

void expect_close(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(got.cpu().allclose(want.cpu(), 1e-5, 1e-6))
      << what << ": max difference " << (got.cpu() - want.cpu()).abs().max().item<float>();
}

// The table after kSteps of bag training on `device`, the ids and offsets given on `ids_on`.
at::Tensor train_bags(const torch::Device& device, const torch::Device& ids_on) {
  Servers servers(2);
  auto client = make_client(servers.addresses());
  TableConfig table = small_table("bags", 40, 8, UpdateMode::kSync, 1);
  RemoteEmbeddingBag bags(client, RemoteEmbeddingBagOptions{table, BagMode::kMean});
  torch::nn::Linear head(8, 2);
  torch::manual_seed(3);
  { torch::NoGradGuard no_grad; head->weight.normal_(); head->bias.zero_(); }
  torch::nn::Sequential model;
  model->push_back("bags", bags);  // the parent's to() reaches the remote module
  model->push_back("head", head);
  model->to(device);
  EXPECT_EQ(bags->device(), device);
  for (int s = 0; s < kSteps; ++s) {
    const at::Tensor ids = (at::arange(12, at::kLong) * (s + 3)).remainder(40).to(ids_on);
    const at::Tensor offsets = at::tensor({0, 4, 5, 9}, at::kLong).to(ids_on);
    const at::Tensor pooled = bags(ids, offsets);
    EXPECT_EQ(pooled.device(), device);
    head(pooled).pow(2).sum().backward();
    client->step();
  }
  return client->lookup("bags", at::arange(40, at::kLong));
}

TEST(CudaPs, RemoteEmbeddingBagOnTheGpuTrainsAsOnTheCpu) {
  need_a_gpu();
  const at::Tensor on_cpu = train_bags(torch::kCPU, torch::kCPU);
  expect_close(train_bags(kGpu, kGpu), on_cpu, "ids on the GPU");
  expect_close(train_bags(kGpu, torch::kCPU), on_cpu, "ids on the CPU");
}

at::Tensor train_embedding(const torch::Device& device) {
  Servers servers(1);
  auto client = make_client(servers.addresses());
  RemoteEmbedding embedding(client, small_table("emb", 30, 4, UpdateMode::kSync, 1));
  embedding->to(device);
  for (int s = 0; s < kSteps; ++s) {
    const at::Tensor ids = (at::arange(10, at::kLong) * (s + 2)).remainder(30).view({2, 5});
    const at::Tensor rows = embedding(ids.to(device));
    EXPECT_EQ(rows.device(), device);
    EXPECT_EQ(rows.sizes(), (std::vector<int64_t>{2, 5, 4}));
    (rows * at::linspace(-1, 1, 4).to(device)).sum().backward();
    client->step();
  }
  return client->lookup("emb", at::arange(30, at::kLong));
}

TEST(CudaPs, RemoteEmbeddingOnTheGpuTrainsAsOnTheCpu) {
  need_a_gpu();
  expect_close(train_embedding(kGpu), train_embedding(torch::kCPU), "table");
}

// The module's parameters after kSteps of DenseModel training in `role` on `device`.
std::vector<at::Tensor> train_dense(const torch::Device& device, DenseRole role) {
  Servers servers(2);
  auto client = make_client(servers.addresses());
  torch::manual_seed(5);
  torch::nn::Sequential model(torch::nn::Linear(6, 16), torch::nn::Functional(torch::relu),
                              torch::nn::Linear(16, 3));
  model->to(device);
  DenseOptions options;
  options.role = role;
  options.optimizer.kind = OptimizerKind::kSgd;
  options.optimizer.lr = 0.05;
  options.optimizer.momentum = 0.9;
  DenseModel dense(client, model.ptr(), options);
  torch::optim::SGD local(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  for (int s = 0; s < kSteps; ++s) {
    torch::manual_seed(100 + s);
    const at::Tensor x = torch::randn({8, 6}).to(device);
    const at::Tensor y = torch::randn({8, 3}).to(device);
    local.zero_grad();
    torch::mse_loss(model->forward(x), y).backward();
    dense.step();
    if (role == DenseRole::kSum) local.step();
  }
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : model->parameters()) {
    EXPECT_EQ(p.device(), device);
    out.push_back(p.detach().cpu());
  }
  return out;
}

TEST(CudaPs, DenseModelOnTheGpuTrainsAsOnTheCpu) {
  need_a_gpu();
  for (DenseRole role : {DenseRole::kOptimizer, DenseRole::kSum}) {
    const auto want = train_dense(torch::kCPU, role);
    const auto got = train_dense(kGpu, role);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      expect_close(got[i], want[i], std::string(to_string(role)) + " parameter " +
                                        std::to_string(i));
    }
  }
}

}  // namespace
}  // namespace gradwire::ps
