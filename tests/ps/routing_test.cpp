// Id routing: every id goes to its owner (id % S) and the answers come back in input order.
#include <gtest/gtest.h>

#include "gradwire/common/error.h"
#include "ps/id_routing.h"

namespace gradwire::ps {
namespace {

TEST(IdRouting, EveryIdGoesToItsOwnerAndPositionsReassemble) {
  const at::Tensor ids = at::tensor({7, 2, 9, 4, 0, 5}, at::kLong);
  const std::vector<ServerShare> shares = route_ids(ids, 3);
  at::Tensor back = at::full({6}, -1, at::kLong);
  int64_t total = 0;
  for (const ServerShare& share : shares) {
    EXPECT_TRUE(share.ids.remainder(3).eq(share.server).all().item<bool>());
    back.index_copy_(0, share.positions, share.ids);
    total += share.ids.numel();
  }
  EXPECT_EQ(total, 6);
  EXPECT_TRUE(back.equal(ids));
}

TEST(IdRouting, ServersWithoutIdsAreLeftOut) {
  const std::vector<ServerShare> shares = route_ids(at::tensor({4, 8}, at::kLong), 4);
  ASSERT_EQ(shares.size(), 1u);
  EXPECT_EQ(shares[0].server, 0);
}

TEST(IdRouting, UniqueIdsAndInverseRebuildTheInput) {
  const at::Tensor ids = at::tensor({5, 1, 5, 3, 1}, at::kLong);
  const UniqueIds unique = unique_ids(ids);
  EXPECT_TRUE(unique.ids.equal(at::tensor({1, 3, 5}, at::kLong)));
  EXPECT_TRUE(unique.ids.index_select(0, unique.inverse).equal(ids));
}

TEST(IdRouting, OutOfRangeIdsAreNamed) {
  try {
    check_ids(at::tensor({1, 12, 3}, at::kLong), 10, "lookup of", "emb");
    FAIL() << "no error";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("id 12 at position 1 is out of range [0, 10)"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(check_ids(at::tensor({-1}, at::kLong), 10, "lookup of", "emb"), InvalidArgument);
  EXPECT_THROW(check_ids(at::tensor({1}, at::kInt), 10, "lookup of", "emb"), InvalidArgument);
}

}  // namespace
}  // namespace gradwire::ps
