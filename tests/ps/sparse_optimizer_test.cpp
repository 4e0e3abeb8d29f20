// Sparse optimizers: a dense table touched everywhere trains exactly like torch::optim; rows not
// touched keep their weights and state; state round trips.
#include "ps/core/sparse_optimizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/optim.h>
#include <torch/torch.h>

#include <functional>
#include <string>

#include "gradwire/common/error.h"

namespace gradwire::ps {
namespace {

using ::testing::HasSubstr;

struct OptimizerCase {
  std::string name;
  OptimizerConfig config;
  std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>)> reference;
};

std::vector<OptimizerCase> cases() {
  std::vector<OptimizerCase> all;
  OptimizerConfig sgd;
  sgd.kind = OptimizerKind::kSgd;
  sgd.lr = 0.1;
  all.push_back({"sgd", sgd, [](std::vector<torch::Tensor> params) {
                   return std::make_unique<torch::optim::SGD>(params,
                                                              torch::optim::SGDOptions(0.1));
                 }});
  OptimizerConfig momentum = sgd;
  momentum.momentum = 0.9;
  all.push_back({"sgd_momentum", momentum, [](std::vector<torch::Tensor> params) {
                   return std::make_unique<torch::optim::SGD>(
                       params, torch::optim::SGDOptions(0.1).momentum(0.9));
                 }});
  OptimizerConfig adagrad;
  adagrad.kind = OptimizerKind::kAdagrad;
  adagrad.lr = 0.05;
  adagrad.eps = 1e-10;
  all.push_back({"adagrad", adagrad, [](std::vector<torch::Tensor> params) {
                   return std::make_unique<torch::optim::Adagrad>(
                       params, torch::optim::AdagradOptions(0.05).eps(1e-10));
                 }});
  OptimizerConfig adam;
  adam.kind = OptimizerKind::kAdam;
  adam.lr = 0.01;
  adam.beta1 = 0.8;
  adam.beta2 = 0.95;
  adam.eps = 1e-7;
  all.push_back({"adam", adam, [](std::vector<torch::Tensor> params) {
                   return std::make_unique<torch::optim::Adam>(
                       params, torch::optim::AdamOptions(0.01).betas({0.8, 0.95}).eps(1e-7));
                 }});
  return all;
}

double max_difference(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

TEST(SparseOptimizerTest, DenseTableMatchesTorchOptim) {
  constexpr int64_t kRows = 6;
  constexpr int64_t kDim = 5;
  for (const OptimizerCase& c : cases()) {
    SCOPED_TRACE(c.name);
    torch::manual_seed(1);
    at::Tensor weights = torch::randn({kRows, kDim});
    const at::Tensor initial = weights.clone();
    torch::Tensor parameter = weights.clone().requires_grad_(true);
    auto reference = c.reference({parameter});
    auto sparse = make_sparse_optimizer(c.config, kRows, kDim);
    // Rows in a scrambled order, gradients permuted alike.
    const at::Tensor rows = at::tensor({3, 0, 5, 1, 4, 2}, at::TensorOptions().dtype(at::kLong));
    for (int64_t step = 1; step <= 6; ++step) {
      const at::Tensor grads = torch::randn({kRows, kDim});
      parameter.mutable_grad() = grads.clone();
      reference->step();
      sparse->apply(weights, rows, grads.index_select(0, rows), step);
      EXPECT_LE(max_difference(weights, parameter.detach()), 1e-6) << "step " << step;
    }
    // The test can fail: the weights moved.
    EXPECT_GT(max_difference(weights, initial), 1e-3);
  }
}

TEST(SparseOptimizerTest, UntouchedRowsAndTheirStateStayUnchanged) {
  constexpr int64_t kRows = 10;
  constexpr int64_t kDim = 3;
  for (const OptimizerCase& c : cases()) {
    SCOPED_TRACE(c.name);
    torch::manual_seed(2);
    at::Tensor weights = torch::randn({kRows, kDim});
    auto sparse = make_sparse_optimizer(c.config, kRows, kDim);
    const at::Tensor first_rows = at::tensor({7, 1}, at::TensorOptions().dtype(at::kLong));
    sparse->apply(weights, first_rows, torch::randn({2, kDim}), 1);
    const at::Tensor after_first = weights.clone();
    OptimizerState state_after_first;
    for (const auto& [name, tensor] : sparse->state()) {
      state_after_first.emplace_back(name, tensor.clone());
    }
    // Steps 2 and 3 touch rows 4 and 1 only: rows 7 (touched before) and the never touched
    // rows keep their weights and state; the momentum of row 7 does not keep moving it.
    const at::Tensor later_rows = at::tensor({4, 1}, at::TensorOptions().dtype(at::kLong));
    sparse->apply(weights, later_rows, torch::randn({2, kDim}), 2);
    sparse->apply(weights, later_rows, torch::randn({2, kDim}), 3);
    for (int64_t row = 0; row < kRows; ++row) {
      const bool touched_later = row == 4 || row == 1;
      EXPECT_EQ(at::equal(weights[row], after_first[row]), !touched_later) << "row " << row;
      for (size_t i = 0; i < state_after_first.size(); ++i) {
        EXPECT_EQ(at::equal(sparse->state()[i].second[row], state_after_first[i].second[row]),
                  !touched_later)
            << state_after_first[i].first << " row " << row;
      }
    }
  }
}

TEST(SparseOptimizerTest, StateRoundTrips) {
  constexpr int64_t kRows = 4;
  constexpr int64_t kDim = 2;
  for (const OptimizerCase& c : cases()) {
    SCOPED_TRACE(c.name);
    torch::manual_seed(3);
    at::Tensor weights = torch::randn({kRows, kDim});
    const at::Tensor rows = at::arange(0, kRows, at::kLong);
    auto original = make_sparse_optimizer(c.config, kRows, kDim);
    original->apply(weights, rows, torch::randn({kRows, kDim}), 1);
    original->apply(weights, rows, torch::randn({kRows, kDim}), 2);
    const std::vector<std::string> names = optimizer_state_names(c.config);
    ASSERT_EQ(original->state().size(), names.size());
    auto restored = make_sparse_optimizer(c.config, kRows, kDim);
    OptimizerState copy;
    for (const auto& [name, tensor] : original->state()) copy.emplace_back(name, tensor.clone());
    restored->load_state(copy);
    at::Tensor weights_a = weights.clone();
    at::Tensor weights_b = weights.clone();
    const at::Tensor grads = torch::randn({kRows, kDim});
    original->apply(weights_a, rows, grads, 3);
    restored->apply(weights_b, rows, grads, 3);
    EXPECT_TRUE(at::equal(weights_a, weights_b));
    for (size_t i = 0; i < names.size(); ++i) {
      EXPECT_EQ(restored->state()[i].first, names[i]);
      EXPECT_TRUE(at::equal(restored->state()[i].second, original->state()[i].second));
    }
  }
}

TEST(SparseOptimizerTest, LoadStateRejectsMissingUnknownAndMisshapen) {
  OptimizerConfig adam;
  adam.kind = OptimizerKind::kAdam;
  auto optimizer = make_sparse_optimizer(adam, 4, 2);
  const at::Tensor good = at::ones({4, 2}, at::kFloat);
  try {
    optimizer->load_state({{"exp_avg", good}});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_THAT(error.what(), HasSubstr("'exp_avg_sq' is missing"));
  }
  try {
    optimizer->load_state({{"exp_avg", good}, {"exp_avg_sq", at::ones({3, 2}, at::kFloat)}});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_THAT(error.what(), HasSubstr("exp_avg_sq"));
    EXPECT_THAT(error.what(), HasSubstr("[4, 2]"));
  }
  EXPECT_THROW(optimizer->load_state({{"exp_avg", good}, {"exp_avg_sq", good}, {"sum", good}}),
               InvalidArgument);
  // Nothing was loaded by the failed calls.
  EXPECT_TRUE(at::equal(optimizer->state()[0].second, at::zeros({4, 2}, at::kFloat)));
  OptimizerConfig plain_sgd;
  EXPECT_TRUE(make_sparse_optimizer(plain_sgd, 4, 2)->state().empty());
  EXPECT_THROW(make_sparse_optimizer(plain_sgd, 4, 2)->load_state({{"momentum_buffer", good}}),
               InvalidArgument);
}

}  // namespace
}  // namespace gradwire::ps
