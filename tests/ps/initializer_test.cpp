// The seeded row initialiser: deterministic, per-row, with the right distributions.
#include "ps/core/initializer.h"

#include <gtest/gtest.h>

#include "gradwire/common/error.h"
#include "id_tensors.h"

namespace gradwire::ps {
namespace {

InitializerConfig config_of(InitializerKind kind, double scale, uint64_t seed) {
  InitializerConfig init;
  init.kind = kind;
  init.scale = scale;
  init.seed = seed;
  return init;
}

using testing::ids_tensor;

TEST(InitializerTest, DeterministicAndSeeded) {
  const InitializerConfig init = config_of(InitializerKind::kNormal, 1.0, 7);
  const at::Tensor ids = at::arange(0, 50, at::kLong);
  const at::Tensor a = initial_rows(init, ids, 9);
  EXPECT_EQ(a.sizes(), (at::IntArrayRef{50, 9}));
  EXPECT_EQ(a.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(a, initial_rows(init, ids, 9)));
  const at::Tensor other_seed = initial_rows(config_of(InitializerKind::kNormal, 1.0, 8), ids, 9);
  EXPECT_FALSE(at::equal(a, other_seed));
  // Different rows differ.
  EXPECT_FALSE(at::equal(a[0], a[1]));
}

TEST(InitializerTest, RowsIndependentOfWhichIdsAreAskedTogether) {
  for (InitializerKind kind : {InitializerKind::kNormal, InitializerKind::kUniform}) {
    const InitializerConfig init = config_of(kind, 0.5, 3);
    const at::Tensor all = initial_rows(init, at::arange(0, 40, at::kLong), 5);
    // Any subset, any order, with duplicates.
    const at::Tensor some = initial_rows(init, ids_tensor({39, 2, 17, 2, 0}), 5);
    EXPECT_TRUE(at::equal(some[0], all[39]));
    EXPECT_TRUE(at::equal(some[1], all[2]));
    EXPECT_TRUE(at::equal(some[2], all[17]));
    EXPECT_TRUE(at::equal(some[3], all[2]));
    EXPECT_TRUE(at::equal(some[4], all[0]));
    // Every other id (as on server 1 of 2).
    const at::Tensor odd = initial_rows(init, at::arange(1, 40, 2, at::kLong), 5);
    EXPECT_TRUE(at::equal(odd, all.slice(0, 1, 40, 2)));
    // initial_value agrees element by element.
    for (int64_t column = 0; column < 5; ++column) {
      EXPECT_EQ(initial_value(init, 17, column), all[17][column].item<float>());
    }
  }
}

TEST(InitializerTest, ColumnsDoNotDependOnDim) {
  const InitializerConfig init = config_of(InitializerKind::kNormal, 1.0, 1);
  const at::Tensor ids = ids_tensor({4, 5, 6});
  const at::Tensor wide = initial_rows(init, ids, 8);
  const at::Tensor narrow = initial_rows(init, ids, 3);
  EXPECT_TRUE(at::equal(narrow, wide.slice(1, 0, 3)));
}

TEST(InitializerTest, NormalHasMeanZeroAndStdScale) {
  const at::Tensor rows = initial_rows(config_of(InitializerKind::kNormal, 0.25, 11),
                                       at::arange(0, 20000, at::kLong), 16);
  EXPECT_NEAR(rows.mean().item<double>(), 0.0, 0.003);
  EXPECT_NEAR(rows.std().item<double>(), 0.25, 0.003);
  // Both halves of each Box-Muller pair are normal.
  EXPECT_NEAR(rows.slice(1, 1, 16, 2).std().item<double>(), 0.25, 0.004);
  // About 68 % within one standard deviation.
  EXPECT_NEAR(rows.abs().lt(0.25).to(at::kFloat).mean().item<double>(), 0.6827, 0.01);
}

TEST(InitializerTest, UniformWithinBounds) {
  const at::Tensor rows = initial_rows(config_of(InitializerKind::kUniform, 0.1, 5),
                                       at::arange(0, 10000, at::kLong), 16);
  EXPECT_LE(rows.max().item<float>(), 0.1f);
  EXPECT_GE(rows.min().item<float>(), -0.1f);
  EXPECT_GT(rows.max().item<float>(), 0.099f);
  EXPECT_LT(rows.min().item<float>(), -0.099f);
  EXPECT_NEAR(rows.mean().item<double>(), 0.0, 0.002);
}

TEST(InitializerTest, Zeros) {
  const at::Tensor rows =
      initial_rows(config_of(InitializerKind::kZeros, 1.0, 5), ids_tensor({1, 2, 3}), 4);
  EXPECT_TRUE(at::equal(rows, at::zeros({3, 4}, at::kFloat)));
}

TEST(InitializerTest, EmptyIdsAndBadArguments) {
  const InitializerConfig init;
  EXPECT_EQ(initial_rows(init, at::empty({0}, at::kLong), 3).sizes(), (at::IntArrayRef{0, 3}));
  EXPECT_THROW(initial_rows(init, at::zeros({2}, at::kInt), 3), InvalidArgument);
  EXPECT_THROW(initial_rows(init, at::zeros({2, 2}, at::kLong), 3), InvalidArgument);
  EXPECT_THROW(initial_rows(init, ids_tensor({1}), 0), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::ps
