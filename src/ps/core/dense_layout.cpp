// Dense parameter layout (gradwire/ps/dense_layout.h): blocks, placement, rows, messages.
#include "gradwire/ps/dense_layout.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/enum_names.h"
#include "gradwire/common/error.h"

namespace gradwire::ps {
namespace {

constexpr EnumNames<BlockPlacement, 2> kPlacementNames{
    {{{BlockPlacement::kRoundRobin, "round-robin"}, {BlockPlacement::kBalanced, "balanced"}}}};

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kIdBytes = 8;

[[noreturn]] void reject(const std::string& field, const std::string& problem) {
  throw InvalidArgument("gradwire: dense layout: " + field + " " + problem + ".");
}

int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// Bytes of one row in a message: W floats and the row's id.
int64_t row_bytes(int64_t row_width) { return 4 * row_width + kIdBytes; }

void validate(int num_servers, const DenseLayoutOptions& options) {
  if (num_servers < 1) reject("num_servers", "is " + std::to_string(num_servers) + "; need >= 1");
  if (options.min_block_elements < 1) {
    reject("DenseLayoutOptions::min_block_elements",
           "is " + std::to_string(options.min_block_elements) + "; need >= 1");
  }
  if (options.placement != BlockPlacement::kRoundRobin &&
      options.placement != BlockPlacement::kBalanced) {
    reject("DenseLayoutOptions::placement",
           "is " + std::to_string(static_cast<int>(options.placement)) +
               ", not one of round-robin, balanced");
  }
  if (options.row_width < 1 || options.row_width > (kMaxInt64 - kIdBytes) / 4) {
    reject("DenseLayoutOptions::row_width", "is " + std::to_string(options.row_width) +
                                                "; need >= 1 (and 4 x row_width + 8 bytes " +
                                                "within int64)");
  }
  const int64_t one_row = row_bytes(options.row_width);
  const std::pair<const char*, int64_t> caps[] = {
      {"DenseLayoutOptions::first_message_bytes", options.first_message_bytes},
      {"DenseLayoutOptions::message_bytes", options.message_bytes}};
  for (const auto& [field, bytes] : caps) {
    if (bytes < one_row) {
      reject(field, "is " + std::to_string(bytes) +
                        "; need at least one row: 4 x row_width + 8 = " + std::to_string(one_row) +
                        " bytes (raise it or lower row_width)");
    }
  }
}

std::string shape_field(size_t param) { return "shapes[" + std::to_string(param) + "]"; }

// prod(dims[from:]); InvalidArgument for a negative dimension or an overflow.
int64_t checked_numel(const std::vector<int64_t>& shape, size_t param, size_t from) {
  int64_t numel = 1;
  for (size_t d = from; d < shape.size(); ++d) {
    if (shape[d] < 0) {
      reject(shape_field(param) + "[" + std::to_string(d) + "]",
             "is " + std::to_string(shape[d]) + "; need >= 0");
    }
    if (__builtin_mul_overflow(numel, shape[d], &numel)) {
      reject(shape_field(param), "has more elements than int64 can count");
    }
  }
  return numel;
}

// Paddle's slice_variable: the block size of a parameter of `numel` (>= 1) elements.
int64_t block_elements(const std::vector<int64_t>& shape, int64_t numel, size_t param,
                       int num_servers, int64_t min_block_elements) {
  const int64_t split =
      std::min<int64_t>(num_servers, std::max<int64_t>(1, numel / min_block_elements));
  int64_t block = ceil_div(numel, split);
  if (shape.size() >= 2) {
    // Whole slices along the first dimension. inner divides numel, so block stays <= numel.
    const int64_t inner = checked_numel(shape, param, 1);
    block = ceil_div(block, inner) * inner;
  }
  return block;
}

// Cuts each parameter into blocks (DenseBlock's param, index_in_param, offset, numel).
std::vector<DenseBlock> cut_blocks(const std::vector<std::vector<int64_t>>& shapes,
                                   const std::vector<int64_t>& numels, int num_servers,
                                   int64_t min_block_elements) {
  // Sizes first, so that a count beyond int indices is refused before anything is allocated.
  std::vector<int64_t> sizes(shapes.size(), 0);
  int64_t count = 0;
  for (size_t p = 0; p < shapes.size(); ++p) {
    if (numels[p] == 0) continue;
    sizes[p] = block_elements(shapes[p], numels[p], p, num_servers, min_block_elements);
    count += ceil_div(numels[p], sizes[p]);  // at most the parameters' total elements
  }
  if (count > std::numeric_limits<int>::max()) {
    reject("shapes", "make " + std::to_string(count) +
                         " blocks; at most 2^31 - 1 work (raise min_block_elements)");
  }
  std::vector<DenseBlock> blocks;
  blocks.reserve(static_cast<size_t>(count));
  for (size_t p = 0; p < shapes.size(); ++p) {
    int index = 0;
    for (int64_t offset = 0; offset < numels[p]; offset += sizes[p], ++index) {
      DenseBlock block;
      block.param = static_cast<int>(p);
      block.index_in_param = index;
      block.offset = offset;
      block.numel = std::min(sizes[p], numels[p] - offset);
      blocks.push_back(block);
    }
  }
  return blocks;
}

// Gives each block its server, rows and ids; returns the table's num_rows.
int64_t place_blocks(std::vector<DenseBlock>& blocks, int num_servers,
                     const DenseLayoutOptions& options) {
  const auto servers = static_cast<size_t>(num_servers);
  std::vector<int64_t> elements(servers, 0);
  std::vector<int64_t> local_rows(servers, 0);
  for (size_t k = 0; k < blocks.size(); ++k) {
    DenseBlock& block = blocks[k];
    size_t server = k % servers;
    if (options.placement == BlockPlacement::kBalanced) {
      server = static_cast<size_t>(std::min_element(elements.begin(), elements.end()) -
                                   elements.begin());
    }
    block.server = static_cast<int>(server);
    block.rows = ceil_div(block.numel, options.row_width);
    block.first_local_row = local_rows[server];
    // Both sums stay below the parameters' total elements, which fit in int64.
    local_rows[server] += block.rows;
    elements[server] += block.numel;
  }
  int64_t num_rows = 0;
  if (__builtin_mul_overflow(*std::max_element(local_rows.begin(), local_rows.end()),
                             int64_t{num_servers}, &num_rows)) {
    reject("num_servers", "is " + std::to_string(num_servers) +
                              ": the table would have more rows than int64 can count");
  }
  for (DenseBlock& block : blocks) {
    block.first_id = block.server + num_servers * block.first_local_row;
  }
  return num_rows;
}

// Note [first message]
// A server's messages complete (and are first needed) in order, so the earliest message of the
// whole model to complete (pushes: the first gradients autograd produces) or to be needed
// (pulls: the parameters of the first layer) is the first message of SOME server. Capping the first
// message of every server at first_message_bytes therefore caps that one, whichever server it is,
// as DDP caps its first bucket at 1 MiB so that communication starts early; it costs at most S - 1
// more small messages. Later messages fill up to message_bytes. A block larger than the room left
// continues in the next message.

// How messages are listed: pushes by the walk position of their last row (when the last
// gradient they carry is ready), pulls by that of their first (when the forward pass first
// needs them), which is the order they are made in.
enum class ListBy { kLastRow, kFirstRow };

// Packs the rows of `walk` (block indices in the order their data is produced or needed) into
// messages, greedily per server, listed as `list_by` says (ties: creation order).
std::vector<DenseMessage> pack_messages(const std::vector<DenseBlock>& blocks,
                                        const std::vector<int>& walk, int num_servers,
                                        const DenseLayoutOptions& options, ListBy list_by) {
  struct Pending {
    DenseMessage message;
    int64_t capacity = 0;  // rows
    size_t ready_at = 0;   // walk position of its last row
  };
  const int64_t one_row = row_bytes(options.row_width);
  std::vector<Pending> pending;                                     // in creation order
  std::vector<int64_t> open(static_cast<size_t>(num_servers), -1);  // index into pending
  std::vector<int> made(static_cast<size_t>(num_servers), 0);
  for (size_t position = 0; position < walk.size(); ++position) {
    const DenseBlock& block = blocks[static_cast<size_t>(walk[position])];
    const auto server = static_cast<size_t>(block.server);
    for (int64_t row = 0; row < block.rows;) {
      if (open[server] < 0 || pending[static_cast<size_t>(open[server])].message.rows ==
                                  pending[static_cast<size_t>(open[server])].capacity) {
        Pending next;
        next.message.server = block.server;
        next.capacity =
            (made[server] == 0 ? options.first_message_bytes : options.message_bytes) / one_row;
        ++made[server];
        open[server] = static_cast<int64_t>(pending.size());
        pending.push_back(std::move(next));
      }
      Pending& current = pending[static_cast<size_t>(open[server])];
      const int64_t take = std::min(current.capacity - current.message.rows, block.rows - row);
      current.message.ranges.push_back(RowRange{walk[position], row, take});
      current.message.rows += take;
      current.ready_at = position;
      row += take;
    }
  }
  std::vector<size_t> order(pending.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (list_by == ListBy::kLastRow) {
    std::stable_sort(order.begin(), order.end(), [&pending](size_t a, size_t b) {
      return pending[a].ready_at < pending[b].ready_at;
    });
  }
  std::vector<DenseMessage> messages;
  messages.reserve(order.size());
  for (size_t i : order) {
    DenseMessage& message = pending[i].message;
    message.bytes = message.rows * one_row;
    messages.push_back(std::move(message));
  }
  return messages;
}

// Per parameter, the messages holding any of its rows (ascending).
std::vector<std::vector<int>> messages_by_param(const std::vector<DenseBlock>& blocks,
                                                const std::vector<DenseMessage>& messages,
                                                size_t num_params) {
  std::vector<std::vector<int>> by_param(num_params);
  for (size_t m = 0; m < messages.size(); ++m) {
    for (const RowRange& range : messages[m].ranges) {
      std::vector<int>& list =
          by_param[static_cast<size_t>(blocks[static_cast<size_t>(range.block)].param)];
      if (list.empty() || list.back() != static_cast<int>(m)) list.push_back(static_cast<int>(m));
    }
  }
  return by_param;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f%%", 100.0 * fraction);
  return text;
}

}  // namespace

const char* to_string(BlockPlacement placement) { return kPlacementNames.name(placement); }

DenseLayout make_dense_layout(const std::vector<std::vector<int64_t>>& shapes, int num_servers,
                              const DenseLayoutOptions& options) {
  validate(num_servers, options);
  if (shapes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    reject("shapes", "has " + std::to_string(shapes.size()) + " parameters; at most 2^31 - 1 work");
  }
  DenseLayout layout;
  layout.num_servers = num_servers;
  layout.row_width = options.row_width;
  int64_t total = 0;
  for (size_t p = 0; p < shapes.size(); ++p) {
    layout.param_numel.push_back(checked_numel(shapes[p], p, 0));
    if (__builtin_add_overflow(total, layout.param_numel.back(), &total)) {
      reject("shapes", "have more elements together than int64 can count");
    }
  }
  if (total == 0) {
    reject("shapes", shapes.empty() ? "is empty; need at least one parameter"
                                    : "hold no element; need at least one parameter element");
  }
  layout.blocks = cut_blocks(shapes, layout.param_numel, num_servers, options.min_block_elements);
  layout.num_rows = place_blocks(layout.blocks, num_servers, options);

  layout.param_blocks.resize(shapes.size());
  std::vector<int> forward(layout.blocks.size());
  for (size_t b = 0; b < layout.blocks.size(); ++b) {
    forward[b] = static_cast<int>(b);
    layout.param_blocks[static_cast<size_t>(layout.blocks[b].param)].push_back(static_cast<int>(b));
  }
  const std::vector<int> backward(forward.rbegin(), forward.rend());
  layout.push_messages =
      pack_messages(layout.blocks, backward, num_servers, options, ListBy::kLastRow);
  layout.pull_messages =
      pack_messages(layout.blocks, forward, num_servers, options, ListBy::kFirstRow);
  layout.param_push_messages =
      messages_by_param(layout.blocks, layout.push_messages, shapes.size());
  layout.param_pull_messages =
      messages_by_param(layout.blocks, layout.pull_messages, shapes.size());
  return layout;
}

std::vector<int64_t> message_ids(const DenseLayout& layout, const DenseMessage& message) {
  std::vector<int64_t> ids;
  ids.reserve(static_cast<size_t>(message.rows));
  for (const RowRange& range : message.ranges) {
    const DenseBlock& block = layout.blocks.at(static_cast<size_t>(range.block));
    for (int64_t row = range.first_row; row < range.first_row + range.rows; ++row) {
      ids.push_back(block.first_id + layout.num_servers * row);
    }
  }
  return ids;
}

ElementRange range_elements(const DenseLayout& layout, const RowRange& range) {
  const DenseBlock& block = layout.blocks.at(static_cast<size_t>(range.block));
  const int64_t block_end = block.offset + block.numel;
  ElementRange elements;
  elements.param = block.param;
  elements.begin = block.offset + range.first_row * layout.row_width;
  elements.end = std::min(block_end, elements.begin + range.rows * layout.row_width);
  return elements;
}

std::vector<DenseServerTotals> server_totals(const DenseLayout& layout) {
  std::vector<DenseServerTotals> totals(static_cast<size_t>(layout.num_servers));
  for (const DenseBlock& block : layout.blocks) {
    DenseServerTotals& total = totals.at(static_cast<size_t>(block.server));
    total.elements += block.numel;
    total.rows += block.rows;
    total.bytes += block.rows * layout.row_width * 4;
    ++total.blocks;
  }
  return totals;
}

int64_t padding_elements(const DenseLayout& layout) {
  int64_t padding = 0;
  for (const DenseBlock& block : layout.blocks) {
    padding += block.rows * layout.row_width - block.numel;
  }
  return padding;
}

double padding_fraction(const DenseLayout& layout) {
  int64_t rows = 0;
  for (const DenseBlock& block : layout.blocks) rows += block.rows;
  if (rows == 0) return 0.0;
  return static_cast<double>(padding_elements(layout)) /
         (static_cast<double>(rows) * static_cast<double>(layout.row_width));
}

std::string describe(const DenseLayout& layout, const std::vector<std::string>& names) {
  const size_t num_params = layout.param_numel.size();
  if (!names.empty() && names.size() != num_params) {
    reject("names", "has " + std::to_string(names.size()) + " entries for " +
                        std::to_string(num_params) + " parameters; need one each, or none");
  }
  auto name_of = [&names](int param) {
    return names.empty() ? "#" + std::to_string(param) : names[static_cast<size_t>(param)];
  };
  size_t name_width = 9;  // "parameter"
  for (const DenseBlock& block : layout.blocks) {
    name_width = std::max(name_width, name_of(block.param).size());
  }
  const auto width = static_cast<int>(name_width);
  std::ostringstream out;
  out << "dense layout: " << num_params << " parameters in " << layout.blocks.size()
      << " blocks on " << layout.num_servers << " server(s); table of " << layout.num_rows
      << " rows x " << layout.row_width << "; " << layout.push_messages.size() << " push and "
      << layout.pull_messages.size() << " pull messages\n";
  out << std::left << std::setw(width) << "parameter" << std::right << std::setw(7) << "block"
      << std::setw(12) << "elements" << std::setw(12) << "offset" << std::setw(8) << "server"
      << std::setw(10) << "rows" << std::setw(12) << "first id"
      << "\n";
  for (const DenseBlock& block : layout.blocks) {
    out << std::left << std::setw(width) << name_of(block.param) << std::right << std::setw(7)
        << block.index_in_param << std::setw(12) << block.numel << std::setw(12) << block.offset
        << std::setw(8) << block.server << std::setw(10) << block.rows << std::setw(12)
        << block.first_id << "\n";
  }
  out << std::setw(6) << "server" << std::setw(12) << "elements" << std::setw(14) << "bytes"
      << std::setw(8) << "blocks"
      << "\n";
  const std::vector<DenseServerTotals> totals = server_totals(layout);
  int64_t used_rows = 0;
  for (size_t s = 0; s < totals.size(); ++s) {
    out << std::setw(6) << s << std::setw(12) << totals[s].elements << std::setw(14)
        << totals[s].bytes << std::setw(8) << totals[s].blocks << "\n";
    used_rows += totals[s].rows;
  }
  out << "padding: " << padding_elements(layout) << " of " << used_rows * layout.row_width
      << " elements in rows used (" << percent(padding_fraction(layout)) << "); "
      << layout.num_rows - used_rows << " row(s) of the table unused\n";
  return out.str();
}

}  // namespace gradwire::ps
