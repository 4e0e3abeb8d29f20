// Coalescing sparse rows: duplicates summed, ids unique and ascending.
#include "ps/core/coalesce.h"

#include <gtest/gtest.h>

#include "gradwire/common/error.h"

namespace gradwire::ps {
namespace {

TEST(CoalesceTest, SumsDuplicatesAndSortsIds) {
  const at::Tensor ids = at::tensor({5, 1, 5, 3, 1, 5}, at::TensorOptions().dtype(at::kLong));
  const at::Tensor values = at::arange(0, 12, at::kFloat).reshape({6, 2});
  const SparseRows rows = coalesce(ids, values);
  EXPECT_TRUE(at::equal(rows.ids, at::tensor({1, 3, 5}, at::TensorOptions().dtype(at::kLong))));
  // id 1: rows 1 and 4; id 3: row 3; id 5: rows 0, 2, 5.
  const at::Tensor expected = at::tensor({2 + 8, 3 + 9, 6, 7, 0 + 4 + 10, 1 + 5 + 11},
                                         at::TensorOptions().dtype(at::kFloat))
                                  .reshape({3, 2});
  EXPECT_TRUE(at::equal(rows.values, expected));
}

TEST(CoalesceTest, ReturnsNewTensors) {
  const at::Tensor ids = at::tensor({2, 0}, at::TensorOptions().dtype(at::kLong));
  const at::Tensor values = at::ones({2, 3}, at::kFloat);
  const SparseRows rows = coalesce(ids, values);
  values.fill_(7);
  EXPECT_TRUE(at::equal(rows.values, at::ones({2, 3}, at::kFloat)));
}

TEST(CoalesceTest, EmptyInput) {
  const SparseRows rows = coalesce(at::empty({0}, at::kLong), at::empty({0, 4}, at::kFloat));
  EXPECT_EQ(rows.ids.numel(), 0);
  EXPECT_EQ(rows.values.sizes(), (at::IntArrayRef{0, 4}));
}

TEST(CoalesceTest, RejectsMismatchedInput) {
  EXPECT_THROW(coalesce(at::zeros({3}, at::kLong), at::zeros({2, 4}, at::kFloat)), InvalidArgument);
  EXPECT_THROW(coalesce(at::zeros({3}, at::kInt), at::zeros({3, 4}, at::kFloat)), InvalidArgument);
  EXPECT_THROW(coalesce(at::zeros({3}, at::kLong), at::zeros({3}, at::kFloat)), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::ps
