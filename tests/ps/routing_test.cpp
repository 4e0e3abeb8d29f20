// Id routing: every id goes to its owner (id % S) and the answers come back in input order.
#include <gtest/gtest.h>

#include "gradwire/common/error.h"
#include "ps/core/id_routing.h"

namespace gradwire::ps {
namespace {

TEST(IdRouting, EveryIdGoesToItsOwnerAndPositionsReassemble) {
  const at::Tensor ids = at::tensor({7, 2, 9, 4, 0, 5}, at::kLong);
  const std::vector<RoutedIds> shares = route_ids(ids, 3);
  std::vector<int64_t> back(6, -1);
  size_t total = 0;
  for (const RoutedIds& share : shares) {
    ASSERT_EQ(share.ids.size(), share.positions.size());
    for (size_t i = 0; i < share.ids.size(); ++i) {
      EXPECT_EQ(share.ids[i] % 3, share.server);
      back[static_cast<size_t>(share.positions[i])] = share.ids[i];
    }
    total += share.ids.size();
  }
  EXPECT_EQ(total, 6u);
  EXPECT_EQ(back, (std::vector<int64_t>{7, 2, 9, 4, 0, 5}));
}

TEST(IdRouting, ServersWithoutIdsAreLeftOut) {
  const std::vector<RoutedIds> shares = route_ids(at::tensor({4, 8}, at::kLong), 4);
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

TEST(IdRouting, SharesAboveTheLimitAreCutInOrder) {
  std::vector<RoutedIds> shares(2);
  shares[0] = RoutedIds{0, {0, 2, 4, 6, 8}, {0, 1, 2, 3, 4}};
  shares[1] = RoutedIds{1, {1}, {5}};
  const std::vector<RoutedIds> cut = split_shares(shares, 2);
  ASSERT_EQ(cut.size(), 4u);
  EXPECT_EQ(cut[0].server, 0);
  EXPECT_EQ(cut[0].ids, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(cut[1].ids, (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(cut[2].ids, (std::vector<int64_t>{8}));
  EXPECT_EQ(cut[2].positions, (std::vector<int64_t>{4}));
  EXPECT_EQ(cut[3].server, 1);
  EXPECT_EQ(cut[3].positions, (std::vector<int64_t>{5}));
}

}  // namespace
}  // namespace gradwire::ps
