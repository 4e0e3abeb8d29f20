// Where a model's dense parameters live on the parameter servers, computed from their shapes
// alone: blocks of parameters, the servers holding them, their rows in ONE table of row width W,
// and the messages (one server each) that push gradients and pull parameters. Rows are ordinary
// table rows, so the sparse machinery (gradwire/ps/table.h: row `id` on server id % S at local
// row id / S, lookups and pushes by id) serves dense parameters unchanged (docs/ps.md "Dense
// parameter blocks"). Pure and deterministic: every trainer computes the same layout from the
// same shapes and options. Thread safe (no state); no libtorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gradwire::ps {

// Which server each block goes to.
//  kRoundRobin: the k-th block of the whole list to server k % S (Paddle's default dispatcher).
//  kBalanced:   each block, in order, to the server holding the fewest elements so far (block
//               elements, padding not counted); ties to the lowest server index.
enum class BlockPlacement { kRoundRobin, kBalanced };
const char* to_string(BlockPlacement placement);

struct DenseLayoutOptions {
  // A parameter is cut into at most min(S, max(1, floor(numel / min_block_elements))) blocks
  // (Paddle's slice_variable): a parameter below 2 x min_block_elements stays whole. >= 1.
  int64_t min_block_elements = 8192;
  BlockPlacement placement = BlockPlacement::kRoundRobin;
  // float32 elements per table row (the table's dim). A block's last row is zero-padded, so a
  // small width wastes less on small parameters and a large one costs fewer ids (8 bytes each).
  int64_t row_width = 1024;
  // Most bytes of row data in one message: rows x (4 x row_width + 8), 8 bytes being the row's
  // id. The first message of each server in either direction is capped at first_message_bytes,
  // later ones at message_bytes (Note [first message] in dense_layout.cpp). Both must hold at
  // least one row. The default leaves 64 KiB of a server's 4 MiB --max-request-bytes for the
  // request's own fields (table name, shapes); the client's overhead is 4 KiB.
  int64_t first_message_bytes = int64_t{1} << 20;
  int64_t message_bytes = (int64_t{4} << 20) - (int64_t{64} << 10);
};

// A contiguous run of one parameter's flattened elements, on one server.
struct DenseBlock {
  int param = 0;                // index into the shapes given to make_dense_layout
  int index_in_param = 0;       // 0, 1, ... within the parameter
  int64_t offset = 0;           // first element, in the flattened parameter
  int64_t numel = 0;            // elements (>= 1)
  int server = 0;               // 0 <= server < S
  int64_t first_local_row = 0;  // on that server; the block holds local rows [first, first + rows)
  int64_t rows = 0;             // ceil(numel / row_width), the last one zero-padded
  int64_t first_id = 0;         // server + S x first_local_row; row k's id is first_id + S x k
};

// Rows [first_row, first_row + rows) of block `block` (an index into DenseLayout::blocks).
struct RowRange {
  int block = 0;
  int64_t first_row = 0;
  int64_t rows = 0;
};

// What one request carries: row ranges of one server, in the order their rows travel.
struct DenseMessage {
  int server = 0;
  std::vector<RowRange> ranges;
  int64_t rows = 0;   // sum of the ranges' rows
  int64_t bytes = 0;  // rows x (4 x row_width + 8)
};

struct DenseLayout {
  int num_servers = 0;
  int64_t row_width = 0;
  // The table's rows: S x (most local rows any server uses). Ids a server does not use (the
  // servers with fewer rows) belong to no block and stay at their initial value.
  int64_t num_rows = 0;
  std::vector<int64_t> param_numel;  // per parameter, prod(shape)
  // Blocks in parameter order, each parameter's in element order.
  std::vector<DenseBlock> blocks;
  // Gradients: rows of the blocks in reverse parameter order (autograd's order), per server
  // packed greedily, listed in the order they become complete (by the position of their last
  // block in that order; a server's messages in the order they are filled).
  std::vector<DenseMessage> push_messages;
  // Parameters: the same in forward parameter order, listed in the order the forward pass first
  // needs them (by the position of their first block in that order).
  std::vector<DenseMessage> pull_messages;
  // Per parameter: its blocks (indices into `blocks`, ascending), and the push and pull messages
  // holding any of its rows (indices, ascending). A parameter without elements has none.
  std::vector<std::vector<int>> param_blocks;
  std::vector<std::vector<int>> param_push_messages;
  std::vector<std::vector<int>> param_pull_messages;
};

// The layout of parameters of shapes `shapes` (a scalar is {}) on `num_servers` servers. Every
// row of every block is in exactly one push and one pull message. InvalidArgument naming the
// field when num_servers < 1, an option is out of range (min_block_elements or row_width < 1, a
// message cap below one row), a dimension is negative, a size overflows int64, or no parameter
// has an element (the table would have no rows).
DenseLayout make_dense_layout(const std::vector<std::vector<int64_t>>& shapes, int num_servers,
                              const DenseLayoutOptions& options = {});

// The ids of a message's rows, range by range, row by row: the ids of its lookup or push.
std::vector<int64_t> message_ids(const DenseLayout& layout, const DenseMessage& message);

// The elements of a range's rows in the flattened parameter: [begin, end). Range row k holds
// elements [begin + k x W, begin + (k + 1) x W) clipped to `end`; the rest of the range's last
// row is padding (zeros when pushed, ignored when pulled). A message's buffer is [rows, W]: its
// ranges' rows one after the other.
struct ElementRange {
  int param = 0;
  int64_t begin = 0;
  int64_t end = 0;
};
ElementRange range_elements(const DenseLayout& layout, const RowRange& range);

// What one server holds of the layout.
struct DenseServerTotals {
  int64_t elements = 0;  // parameter elements
  int64_t rows = 0;      // local rows used
  int64_t bytes = 0;     // rows x W x 4: the weights as stored, padding included
  int64_t blocks = 0;
};
std::vector<DenseServerTotals> server_totals(const DenseLayout& layout);

// Elements of padding in the blocks' last rows, and their share of all rows used (rows x W):
// the cost of the row width. Unused ids (num_rows above) are not counted.
int64_t padding_elements(const DenseLayout& layout);
double padding_fraction(const DenseLayout& layout);

// The layout as a table for printing on request: per block its parameter's name, index within
// the parameter, elements, element offset, server, rows and first id; then per server elements,
// bytes and blocks, and the padding overhead. `names` has one name per parameter, or is empty
// (parameters are then shown by index); InvalidArgument otherwise.
std::string describe(const DenseLayout& layout, const std::vector<std::string>& names = {});

}  // namespace gradwire::ps
