// Dense parameter layout: Paddle's block rule, placement, ids on their servers, every element in
// exactly one block row and every row in exactly one push and one pull message, message caps and
// orders, ResNet-18's padding, describe() and the errors for bad options.
#include "gradwire/ps/dense_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gradwire/common/error.h"

namespace gradwire::ps {
namespace {

using Shapes = std::vector<std::vector<int64_t>>;

struct NamedShapes {
  std::vector<std::string> names;
  Shapes shapes;
  void add(const std::string& name, std::vector<int64_t> shape) {
    names.push_back(name);
    shapes.push_back(std::move(shape));
  }
};

void add_batch_norm(NamedShapes& model, const std::string& name, int64_t channels) {
  model.add(name + ".weight", {channels});
  model.add(name + ".bias", {channels});
}

// torchvision's resnet18 parameters (buffers such as running_mean are not parameters).
NamedShapes resnet18_shapes() {
  NamedShapes model;
  model.add("conv1.weight", {64, 3, 7, 7});
  add_batch_norm(model, "bn1", 64);
  int64_t in = 64;
  const int64_t widths[] = {64, 128, 256, 512};
  for (int layer = 0; layer < 4; ++layer) {
    const int64_t out = widths[layer];
    for (int block = 0; block < 2; ++block) {
      const std::string prefix =
          "layer" + std::to_string(layer + 1) + "." + std::to_string(block) + ".";
      model.add(prefix + "conv1.weight", {out, block == 0 ? in : out, 3, 3});
      add_batch_norm(model, prefix + "bn1", out);
      model.add(prefix + "conv2.weight", {out, out, 3, 3});
      add_batch_norm(model, prefix + "bn2", out);
      if (block == 0 && in != out) {
        model.add(prefix + "downsample.0.weight", {out, in, 1, 1});
        add_batch_norm(model, prefix + "downsample.1", out);
      }
    }
    in = out;
  }
  model.add("fc.weight", {1000, 512});
  model.add("fc.bias", {1000});
  return model;
}

std::vector<int64_t> block_sizes(const DenseLayout& layout, int param) {
  std::vector<int64_t> sizes;
  for (int b : layout.param_blocks[static_cast<size_t>(param)]) {
    sizes.push_back(layout.blocks[static_cast<size_t>(b)].numel);
  }
  return sizes;
}

int64_t most_elements_on_a_server(const DenseLayout& layout) {
  int64_t most = 0;
  for (const DenseServerTotals& total : server_totals(layout))
    most = std::max(most, total.elements);
  return most;
}

// Small rows and caps, so that ResNet-18's blocks span many messages and some split.
DenseLayoutOptions small_message_options() {
  DenseLayoutOptions options;
  options.row_width = 64;                        // 264 bytes a row with its id
  options.first_message_bytes = 10 * 264 + 100;  // 10 rows
  options.message_bytes = int64_t{40} * 264;     // 40 rows
  return options;
}

// Every (block, row) pair appears once in `messages`, and the messages are well formed.
void expect_rows_once(const DenseLayout& layout, const std::vector<DenseMessage>& messages,
                      const DenseLayoutOptions& options) {
  const int64_t row_bytes = 4 * layout.row_width + 8;
  std::set<std::pair<int, int64_t>> seen;
  for (const DenseMessage& message : messages) {
    int64_t rows = 0;
    for (const RowRange& range : message.ranges) {
      const DenseBlock& block = layout.blocks[static_cast<size_t>(range.block)];
      EXPECT_EQ(block.server, message.server) << "a message mixes servers";
      EXPECT_GE(range.rows, 1);
      EXPECT_GE(range.first_row, 0);
      EXPECT_LE(range.first_row + range.rows, block.rows);
      for (int64_t row = range.first_row; row < range.first_row + range.rows; ++row) {
        EXPECT_TRUE(seen.insert({range.block, row}).second)
            << "block " << range.block << " row " << row << " twice";
      }
      rows += range.rows;
    }
    EXPECT_EQ(message.rows, rows);
    EXPECT_EQ(message.bytes, rows * row_bytes);
    EXPECT_LE(message.bytes, std::max(options.message_bytes, options.first_message_bytes));
  }
  int64_t all_rows = 0;
  for (const DenseBlock& block : layout.blocks) all_rows += block.rows;
  EXPECT_EQ(static_cast<int64_t>(seen.size()), all_rows);
}

// Each parameter element is in exactly one range of `messages` (range_elements).
void expect_elements_once(const DenseLayout& layout, const std::vector<DenseMessage>& messages) {
  std::vector<std::vector<char>> covered;
  for (int64_t numel : layout.param_numel) covered.emplace_back(static_cast<size_t>(numel), 0);
  for (const DenseMessage& message : messages) {
    for (const RowRange& range : message.ranges) {
      const ElementRange elements = range_elements(layout, range);
      const DenseBlock& block = layout.blocks[static_cast<size_t>(range.block)];
      EXPECT_EQ(elements.param, block.param);
      // Only the block's last row may be short.
      EXPECT_GT(elements.end - elements.begin, (range.rows - 1) * layout.row_width);
      EXPECT_LE(elements.end - elements.begin, range.rows * layout.row_width);
      for (int64_t e = elements.begin; e < elements.end; ++e) {
        ++covered[static_cast<size_t>(elements.param)][static_cast<size_t>(e)];
      }
    }
  }
  for (size_t p = 0; p < covered.size(); ++p) {
    for (size_t e = 0; e < covered[p].size(); ++e) {
      ASSERT_EQ(covered[p][e], 1) << "parameter " << p << " element " << e;
    }
  }
}

// For each server, its messages (in list order) hold its blocks in `walk` order, rows ascending
// and contiguous, and all but its last message are full.
void expect_walk_order(const DenseLayout& layout, const std::vector<DenseMessage>& messages,
                       bool backward, const DenseLayoutOptions& options) {
  const int64_t row_bytes = 4 * layout.row_width + 8;
  for (int server = 0; server < layout.num_servers; ++server) {
    std::vector<int> walk;
    for (size_t b = 0; b < layout.blocks.size(); ++b) {
      if (layout.blocks[b].server == server) walk.push_back(static_cast<int>(b));
    }
    if (backward) std::reverse(walk.begin(), walk.end());
    size_t at = 0;
    int64_t next_row = 0;
    std::vector<const DenseMessage*> mine;
    for (const DenseMessage& message : messages) {
      if (message.server != server) continue;
      mine.push_back(&message);
      for (const RowRange& range : message.ranges) {
        ASSERT_LT(at, walk.size());
        EXPECT_EQ(range.block, walk[at]);
        EXPECT_EQ(range.first_row, next_row);
        next_row += range.rows;
        if (next_row == layout.blocks[static_cast<size_t>(range.block)].rows) {
          ++at;
          next_row = 0;
        }
      }
    }
    EXPECT_EQ(at, walk.size()) << "server " << server;
    for (size_t m = 0; m < mine.size(); ++m) {
      const int64_t cap = m == 0 ? options.first_message_bytes : options.message_bytes;
      EXPECT_LE(mine[m]->bytes, cap) << "server " << server << " message " << m;
      if (m + 1 < mine.size()) {
        EXPECT_EQ(mine[m]->rows, cap / row_bytes) << "server " << server << " message " << m;
      }
    }
  }
  // Pushes are listed in the order they complete: the walk position of their last block never
  // goes back. Pulls in the order they are first needed: that of their first block.
  const auto last = static_cast<int>(layout.blocks.size()) - 1;
  int previous = -1;
  for (const DenseMessage& message : messages) {
    const int key = backward ? last - message.ranges.back().block : message.ranges.front().block;
    EXPECT_GE(key, previous);
    previous = key;
  }
}

TEST(DenseLayout, PaddleRuleKeepsASmallConvWhole) {
  // 9408 elements: floor(9408 / 8192) = 1 block even with 2 servers.
  const DenseLayout layout = make_dense_layout({{64, 3, 7, 7}}, 2);
  ASSERT_EQ(layout.blocks.size(), 1u);
  EXPECT_EQ(layout.blocks[0].numel, 9408);
  EXPECT_EQ(layout.blocks[0].rows, 10);  // ceil(9408 / 1024)
  EXPECT_EQ(layout.blocks[0].server, 0);
  EXPECT_EQ(layout.num_rows, 2 * 10);
}

TEST(DenseLayout, PaddleRuleAlignsBlocksToWholeRowsOfTheParameter) {
  // 512000 elements on 3 servers: ceil(512000 / 3) = 170667, rounded up to 334 x 512 = 171008.
  const DenseLayout layout = make_dense_layout({{1000, 512}}, 3);
  EXPECT_EQ(block_sizes(layout, 0), (std::vector<int64_t>{171008, 171008, 169984}));
  for (size_t b = 0; b < layout.blocks.size(); ++b) {
    EXPECT_EQ(layout.blocks[b].offset, static_cast<int64_t>(b) * 171008);
    EXPECT_EQ(layout.blocks[b].index_in_param, static_cast<int>(b));
    EXPECT_EQ(layout.blocks[b].numel % 512, 0);
    EXPECT_EQ(layout.blocks[b].server, static_cast<int>(b));
  }
  // Rounding up to whole slices can leave fewer blocks than servers: 20000 / 4 = 5000 -> 8000.
  DenseLayoutOptions options;
  options.min_block_elements = 1000;
  EXPECT_EQ(block_sizes(make_dense_layout({{5, 4000}}, 4, options), 0),
            (std::vector<int64_t>{8000, 8000, 4000}));
}

TEST(DenseLayout, ABiasAndAScalarAreOneBlockOfOneRow) {
  const DenseLayout layout = make_dense_layout({{10}, {}}, 4);
  EXPECT_EQ(layout.param_numel, (std::vector<int64_t>{10, 1}));
  EXPECT_EQ(block_sizes(layout, 0), (std::vector<int64_t>{10}));
  EXPECT_EQ(block_sizes(layout, 1), (std::vector<int64_t>{1}));
  EXPECT_EQ(layout.blocks[0].rows, 1);
  EXPECT_EQ(layout.blocks[1].server, 1);
  EXPECT_EQ(layout.num_rows, 4);
}

TEST(DenseLayout, ALargeParameterSplitsOverEveryServer) {
  // floor(100000 / 8192) = 12 >= 4 servers: one block each.
  EXPECT_EQ(block_sizes(make_dense_layout({{100000}}, 4), 0),
            (std::vector<int64_t>{25000, 25000, 25000, 25000}));
  // floor(20000 / 8192) = 2 < 4 servers: two blocks.
  EXPECT_EQ(block_sizes(make_dense_layout({{20000}}, 4), 0), (std::vector<int64_t>{10000, 10000}));
  // Uneven: ceil(100001 / 3) = 33334, the last block smaller.
  EXPECT_EQ(block_sizes(make_dense_layout({{100001}}, 3), 0),
            (std::vector<int64_t>{33334, 33334, 33333}));
}

TEST(DenseLayout, OneServerKeepsEveryParameterWholeAndItsRowsInOrder) {
  const NamedShapes model = resnet18_shapes();
  const DenseLayout layout = make_dense_layout(model.shapes, 1);
  ASSERT_EQ(layout.blocks.size(), model.shapes.size());
  int64_t row = 0;
  for (size_t b = 0; b < layout.blocks.size(); ++b) {
    const DenseBlock& block = layout.blocks[b];
    EXPECT_EQ(block.param, static_cast<int>(b));
    EXPECT_EQ(block.numel, layout.param_numel[b]);
    EXPECT_EQ(block.server, 0);
    EXPECT_EQ(block.first_id, row);
    row += block.rows;
  }
  EXPECT_EQ(layout.num_rows, row);
}

TEST(DenseLayout, RoundRobinPutsTheKthBlockOnServerKModS) {
  const DenseLayout layout = make_dense_layout(resnet18_shapes().shapes, 3);
  for (size_t k = 0; k < layout.blocks.size(); ++k) {
    EXPECT_EQ(layout.blocks[k].server, static_cast<int>(k % 3));
  }
}

TEST(DenseLayout, BalancedBeatsRoundRobinOnASkewedModel) {
  // Large and small parameters alternate: round robin puts every large one on server 0.
  const Shapes shapes = {{100000}, {10}, {100000}, {10}, {100000}, {10}, {100000}, {10}};
  DenseLayoutOptions options;
  options.min_block_elements = int64_t{1} << 40;  // every parameter one block
  const DenseLayout round_robin = make_dense_layout(shapes, 2, options);
  options.placement = BlockPlacement::kBalanced;
  const DenseLayout balanced = make_dense_layout(shapes, 2, options);
  EXPECT_EQ(most_elements_on_a_server(round_robin), 400000);
  EXPECT_EQ(most_elements_on_a_server(balanced), 200020);
  EXPECT_LT(balanced.num_rows, round_robin.num_rows);
  // Ties go to the lowest server: the first block to server 0, then the emptier one.
  EXPECT_EQ(balanced.blocks[0].server, 0);
  EXPECT_EQ(balanced.blocks[1].server, 1);
  EXPECT_EQ(balanced.blocks[2].server, 1);
  // On ResNet-18 it is never worse than round robin.
  for (int servers : {2, 3}) {
    DenseLayoutOptions resnet_options;
    const int64_t rr =
        most_elements_on_a_server(make_dense_layout(resnet18_shapes().shapes, servers));
    resnet_options.placement = BlockPlacement::kBalanced;
    EXPECT_LE(most_elements_on_a_server(
                  make_dense_layout(resnet18_shapes().shapes, servers, resnet_options)),
              rr);
  }
}

TEST(DenseLayout, IdsAreDistinctAndOnTheirServersLocalRows) {
  for (int servers : {1, 2, 3, 5}) {
    for (BlockPlacement placement : {BlockPlacement::kRoundRobin, BlockPlacement::kBalanced}) {
      SCOPED_TRACE(std::to_string(servers) + " servers, " + to_string(placement));
      DenseLayoutOptions options;
      options.placement = placement;
      const DenseLayout layout = make_dense_layout(resnet18_shapes().shapes, servers, options);
      std::set<int64_t> ids;
      std::vector<int64_t> local_rows(static_cast<size_t>(servers), 0);
      for (const DenseBlock& block : layout.blocks) {
        EXPECT_EQ(block.first_local_row, local_rows[static_cast<size_t>(block.server)]);
        local_rows[static_cast<size_t>(block.server)] += block.rows;
        for (int64_t row = 0; row < block.rows; ++row) {
          const int64_t id = block.first_id + servers * row;
          EXPECT_EQ(id % servers, block.server);
          EXPECT_EQ(id / servers, block.first_local_row + row);
          EXPECT_LT(id, layout.num_rows);
          EXPECT_TRUE(ids.insert(id).second) << "id " << id << " twice";
        }
      }
      EXPECT_EQ(layout.num_rows, servers * *std::max_element(local_rows.begin(), local_rows.end()));
      // The message ids are exactly the blocks' ids, each once per direction.
      for (const auto* messages : {&layout.push_messages, &layout.pull_messages}) {
        std::set<int64_t> message_id_set;
        for (const DenseMessage& message : *messages) {
          const std::vector<int64_t> message_row_ids = message_ids(layout, message);
          EXPECT_EQ(static_cast<int64_t>(message_row_ids.size()), message.rows);
          for (int64_t id : message_row_ids) {
            EXPECT_EQ(id % servers, message.server);
            EXPECT_TRUE(message_id_set.insert(id).second);
          }
        }
        EXPECT_EQ(message_id_set, ids);
      }
    }
  }
}

TEST(DenseLayout, BlocksCoverEveryElementOnce) {
  const DenseLayout layout = make_dense_layout(resnet18_shapes().shapes, 3);
  for (size_t p = 0; p < layout.param_numel.size(); ++p) {
    int64_t next = 0;
    for (int b : layout.param_blocks[p]) {
      const DenseBlock& block = layout.blocks[static_cast<size_t>(b)];
      EXPECT_EQ(block.param, static_cast<int>(p));
      EXPECT_EQ(block.offset, next);
      EXPECT_EQ(block.rows, (block.numel + layout.row_width - 1) / layout.row_width);
      next += block.numel;
    }
    EXPECT_EQ(next, layout.param_numel[p]);
  }
}

TEST(DenseLayout, EveryRowAndElementIsInOnePushAndOnePullMessage) {
  const DenseLayoutOptions small = small_message_options();
  for (int servers : {1, 2, 3}) {
    for (const DenseLayoutOptions& options : {DenseLayoutOptions{}, small}) {
      SCOPED_TRACE(std::to_string(servers) + " servers, row width " +
                   std::to_string(options.row_width));
      const DenseLayout layout = make_dense_layout(resnet18_shapes().shapes, servers, options);
      expect_rows_once(layout, layout.push_messages, options);
      expect_rows_once(layout, layout.pull_messages, options);
      expect_elements_once(layout, layout.push_messages);
      expect_elements_once(layout, layout.pull_messages);
    }
  }
}

TEST(DenseLayout, MessagesKeepTheirCapsAndPushGoesBackwardPullForward) {
  const DenseLayoutOptions small = small_message_options();
  for (int servers : {1, 2, 3}) {
    for (const DenseLayoutOptions& options : {DenseLayoutOptions{}, small}) {
      SCOPED_TRACE(std::to_string(servers) + " servers, row width " +
                   std::to_string(options.row_width));
      const DenseLayout layout = make_dense_layout(resnet18_shapes().shapes, servers, options);
      expect_walk_order(layout, layout.push_messages, /*backward=*/true, options);
      expect_walk_order(layout, layout.pull_messages, /*backward=*/false, options);
      // The earliest message of the model is small, in both directions.
      EXPECT_LE(layout.push_messages.front().bytes, options.first_message_bytes);
      EXPECT_LE(layout.pull_messages.front().bytes, options.first_message_bytes);
      // The first parameters pulled are conv1's; with one server the first gradients pushed are
      // fc.bias's (with more, another server's first message may complete before).
      EXPECT_EQ(layout.pull_messages.front().ranges.front().block, 0);
      if (servers == 1) {
        const int first_pushed = layout.push_messages.front().ranges.front().block;
        EXPECT_EQ(layout.blocks[static_cast<size_t>(first_pushed)].param,
                  static_cast<int>(layout.param_numel.size()) - 1);
      }
    }
  }
  // With the small caps ResNet-18 needs many messages, and its large blocks split.
  const DenseLayout layout = make_dense_layout(resnet18_shapes().shapes, 2, small);
  EXPECT_GT(layout.push_messages.size(), 1000u);
  bool split = false;
  for (const DenseMessage& message : layout.pull_messages) {
    for (const RowRange& range : message.ranges) {
      split |= range.rows < layout.blocks[static_cast<size_t>(range.block)].rows;
    }
  }
  EXPECT_TRUE(split);
}

TEST(DenseLayout, DefaultMessagesFitAServersRequestLimit) {
  const DenseLayoutOptions options;
  EXPECT_EQ(options.message_bytes + (64 << 10), 4 << 20);
  EXPECT_EQ(options.first_message_bytes, 1 << 20);
  // 1006 rows of 1024 floats and an id.
  const DenseLayout layout = make_dense_layout({{4096, 1024}}, 1);
  ASSERT_EQ(layout.pull_messages.size(), 5u);
  EXPECT_EQ(layout.pull_messages[0].rows, (1 << 20) / 4104);
  EXPECT_EQ(layout.pull_messages[1].rows, options.message_bytes / 4104);
}

TEST(DenseLayout, EachParameterListsThePullMessagesItNeeds) {
  const NamedShapes model = resnet18_shapes();
  for (const DenseLayoutOptions& options : {DenseLayoutOptions{}, small_message_options()}) {
    const DenseLayout layout = make_dense_layout(model.shapes, 3, options);
    const std::pair<const std::vector<DenseMessage>*, const std::vector<std::vector<int>>*>
        directions[] = {{&layout.pull_messages, &layout.param_pull_messages},
                        {&layout.push_messages, &layout.param_push_messages}};
    for (const auto& [messages, by_param] : directions) {
      ASSERT_EQ(by_param->size(), model.shapes.size());
      std::vector<std::set<int>> expected(model.shapes.size());
      for (size_t m = 0; m < messages->size(); ++m) {
        for (const RowRange& range : (*messages)[m].ranges) {
          expected[static_cast<size_t>(layout.blocks[static_cast<size_t>(range.block)].param)]
              .insert(static_cast<int>(m));
        }
      }
      for (size_t p = 0; p < expected.size(); ++p) {
        EXPECT_EQ((*by_param)[p], std::vector<int>(expected[p].begin(), expected[p].end()))
            << model.names[p];
      }
    }
  }
  // By default conv1 (10 rows) needs only the first pull message.
  const DenseLayout layout = make_dense_layout(model.shapes, 3);
  EXPECT_EQ(layout.param_pull_messages[0], (std::vector<int>{0}));
}

TEST(DenseLayout, IdsAndElementsOfAMessage) {
  // W = 4: a [10] bias has 3 rows (elements 0-3, 4-7, 8-9 and two of padding).
  DenseLayoutOptions options;
  options.row_width = 4;
  options.first_message_bytes = int64_t{2} * (4 * 4 + 8);  // 2 rows
  const DenseLayout layout = make_dense_layout({{10}, {3}}, 2, options);
  ASSERT_EQ(layout.blocks.size(), 2u);
  EXPECT_EQ(layout.blocks[0].rows, 3);
  EXPECT_EQ(layout.blocks[0].first_id, 0);
  EXPECT_EQ(layout.blocks[1].first_id, 1);
  ASSERT_EQ(layout.pull_messages.size(), 3u);
  // Server 0's first message holds rows 0-1 of the bias, its second row 2; server 1's the [3].
  EXPECT_EQ(message_ids(layout, layout.pull_messages[0]), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(message_ids(layout, layout.pull_messages[1]), (std::vector<int64_t>{4}));
  EXPECT_EQ(message_ids(layout, layout.pull_messages[2]), (std::vector<int64_t>{1}));
  const ElementRange first = range_elements(layout, layout.pull_messages[0].ranges[0]);
  EXPECT_EQ(first.param, 0);
  EXPECT_EQ(first.begin, 0);
  EXPECT_EQ(first.end, 8);
  const ElementRange last = range_elements(layout, layout.pull_messages[1].ranges[0]);
  EXPECT_EQ(last.begin, 8);
  EXPECT_EQ(last.end, 10);
  EXPECT_EQ(padding_elements(layout), 2 + 1);
  EXPECT_EQ(layout.num_rows, 2 * 3);
}

TEST(DenseLayout, ParametersWithoutElementsHaveNoBlocks) {
  const DenseLayout layout = make_dense_layout({{0, 5}, {10}}, 2);
  EXPECT_TRUE(layout.param_blocks[0].empty());
  EXPECT_TRUE(layout.param_pull_messages[0].empty());
  EXPECT_TRUE(layout.param_push_messages[0].empty());
  EXPECT_EQ(block_sizes(layout, 1), (std::vector<int64_t>{10}));
}

TEST(DenseLayout, ResNet18PadsLessThanOnePercent) {
  const NamedShapes model = resnet18_shapes();
  for (int servers : {1, 2, 3}) {
    SCOPED_TRACE(std::to_string(servers) + " servers");
    const DenseLayout layout = make_dense_layout(model.shapes, servers);
    int64_t total = 0;
    for (int64_t numel : layout.param_numel) total += numel;
    EXPECT_EQ(total, 11689512);  // torchvision's count
    EXPECT_LT(padding_fraction(layout), 0.01);
    EXPECT_GT(padding_elements(layout), 0);
    int64_t elements = 0;
    for (const DenseServerTotals& server : server_totals(layout)) elements += server.elements;
    EXPECT_EQ(elements, total);
  }
}

TEST(DenseLayout, DescribeShowsBlocksServersAndPadding) {
  const DenseLayout layout = make_dense_layout({{1000, 512}, {1000}}, 2);
  const std::string text = describe(layout, {"fc.weight", "fc.bias"});
  EXPECT_NE(text.find("2 parameters in 3 blocks on 2 server(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("fc.weight"), std::string::npos) << text;
  EXPECT_NE(text.find("fc.bias"), std::string::npos) << text;
  EXPECT_NE(text.find("first id"), std::string::npos) << text;
  EXPECT_NE(text.find("padding: 24 of"), std::string::npos) << text;  // 1024 - 1000
  // One line per block, after the header line and the column titles.
  size_t lines = 0;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  EXPECT_EQ(lines, 2 + 3 + 1 + 2 + 1u) << text;
  EXPECT_NE(describe(layout).find("#1"), std::string::npos);
  EXPECT_THROW(describe(layout, {"only one"}), InvalidArgument);
}

// The InvalidArgument of `make` names `field`.
template <typename Make>
void expect_rejected(Make make, const std::string& field) {
  try {
    make();
    ADD_FAILURE() << "no error for " << field;
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find(field), std::string::npos) << error.what();
  }
}

TEST(DenseLayout, BadOptionsAndShapesAreNamed) {
  const Shapes shapes = {{10}};
  expect_rejected([&] { make_dense_layout(shapes, 0); }, "num_servers is 0");
  DenseLayoutOptions options;
  options.min_block_elements = 0;
  expect_rejected([&] { make_dense_layout(shapes, 1, options); }, "min_block_elements is 0");
  options = {};
  options.row_width = 0;
  expect_rejected([&] { make_dense_layout(shapes, 1, options); }, "row_width is 0");
  options.row_width = int64_t{1} << 62;
  expect_rejected([&] { make_dense_layout(shapes, 1, options); }, "row_width");
  options = {};
  options.message_bytes = 4 * 1024 + 7;
  expect_rejected([&] { make_dense_layout(shapes, 1, options); }, "message_bytes is 4103");
  options = {};
  options.first_message_bytes = 100;
  expect_rejected([&] { make_dense_layout(shapes, 1, options); }, "first_message_bytes is 100");
  options = {};
  options.placement = static_cast<BlockPlacement>(7);
  expect_rejected([&] { make_dense_layout(shapes, 1, options); }, "placement is 7");
  expect_rejected([] { make_dense_layout({{3, -2}}, 1); }, "shapes[0][1] is -2");
  expect_rejected(
      [] {
        make_dense_layout({{10}, {int64_t{1} << 40, int64_t{1} << 40}}, 1);
      },
      "shapes[1]");
  expect_rejected([] { make_dense_layout({}, 1); }, "shapes is empty");
  expect_rejected([] { make_dense_layout({{0}, {4, 0}}, 1); }, "shapes hold no element");
}

}  // namespace
}  // namespace gradwire::ps
